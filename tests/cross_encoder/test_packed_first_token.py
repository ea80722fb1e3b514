"""On packed rows too the cross-encoder's last layer runs for each pair's ``[CLS]`` alone: the
packed scores are the padded path's and sentence-transformers', for less arithmetic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from tests.cross_encoder.test_st_oracle import build_classifier
from torch import Tensor
from torch.utils.flop_counter import FlopCounterMode

from sbert import CrossEncoder
from sbert.inference.packing import PackedTransformer, packed_token_vectors, pass_feeds
from sbert.inference.precision import openvino_installed

st = pytest.importorskip("sentence_transformers")

MAX_LENGTH = 24
PAIRS = [
    ("a man plays guitar", "a man plays music"),
    ("rain", "the sun is big and happy and not sad at all in the park with the dog"),
    ("", "a woman is cooking"),
    ("the dog runs in the park and the cat sleeps on the warm red mat by the door", "a cat eats"),
    ("no", "yes"),
    ("a small red car and a big blue car " * 4, "the woman cooks food and the child eats " * 4),
]
# Rows of several pairs and of one (the last pair, cut at MAX_LENGTH, alone), ending in padding.
PASSES = [[[0, 1, 2], [5]], [[3, 4]]]


@pytest.fixture(scope="module")
def classifier(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_classifier(tiny_model_dir, tmp_path_factory.mktemp("packed") / "ce", num_labels=3)


def packed_feeds(model: CrossEncoder) -> tuple[list[list[int]], dict[str, Tensor]]:
    ids = model.input_module.tokenize(PAIRS).ids
    rows = [row for rows in PASSES for row in rows]
    return ids, {name: torch.from_numpy(value) for name, value in pass_feeds(ids, rows).items()}


def theirs(classifier: Path) -> np.ndarray:
    """sentence-transformers' logits (pairs, labels)."""
    reference = st.CrossEncoder(str(classifier), device="cpu", max_length=MAX_LENGTH)
    return np.asarray(reference.predict(PAIRS, activation_fn=torch.nn.Identity()))


def test_the_packed_graph_computes_the_last_layer_for_first_tokens_alone(classifier: Path) -> None:
    model = CrossEncoder(classifier, device="cpu", precision="float32", max_length=MAX_LENGTH)
    ids, feeds = packed_feeds(model)
    assert max(map(len, ids)) == MAX_LENGTH  # a pair was cut
    network, head = model.input_module.model, model._engine.parts.head
    seen: list[tuple[int, ...]] = []
    hook = head.pooler.register_forward_hook(lambda module, inputs, output: seen.append(inputs[0].shape))
    with torch.inference_mode(), FlopCounterMode(display=False) as counted:
        packed = PackedTransformer(network, head).eval()(**feeds)  # (pairs, labels), in row order
    hook.remove()
    assert seen == [(len(PAIRS), 1, network.config.hidden_size)]  # the head got one token a pair
    order = [i for rows in PASSES for row in rows for i in row]
    np.testing.assert_allclose(packed.numpy(), theirs(classifier)[order], atol=1e-5, rtol=0)
    with torch.inference_mode(), FlopCounterMode(display=False) as whole_counted:
        packed_token_vectors(network, *[feeds[name] for name in ("input_ids", "position_ids", "segment_ids")])
    # The last layer's feed-forward (hidden → intermediate → hidden) is left out for every token of
    # the rows but each pair's first.
    config = network.config
    feed_forward = 2 * 2 * config.hidden_size * config.intermediate_size  # FLOPs a token
    saved = whole_counted.get_total_flops() - counted.get_total_flops()
    assert saved >= (feeds["input_ids"].numel() - len(PAIRS)) * feed_forward


def test_the_packed_graphs_key_is_not_the_whole_bodys(classifier: Path) -> None:
    """A graph cache keys a graph by its module's repr: one traced from the whole packed body must
    not be read back for the first-token one, nor the dense encoder's packed graph change."""
    model = CrossEncoder(classifier, device="cpu", precision="float32")
    network, head = model.input_module.model, model._engine.parts.head
    assert "each sentence's first token" in repr(PackedTransformer(network, head))
    assert "first token" not in repr(PackedTransformer(network.bert, head))


@pytest.mark.skipif(not openvino_installed(), reason="the openvino extra is not installed")
def test_packed_scores_are_the_padded_paths_and_sentence_transformers(classifier: Path) -> None:
    model = CrossEncoder(
        classifier, device="cpu", precision="float32", backend="openvino", max_length=MAX_LENGTH
    )
    reference = theirs(classifier)
    padded = model.logits(PAIRS).numpy()
    assert model.plan.packs and getattr(model._runner(model.plan, True)[1], "packed", False)
    engine = model.runners.openvino["float32"]
    packed = engine.embed_packed(model.input_module.tokenize(PAIRS).ids, PASSES).numpy()
    np.testing.assert_allclose(packed, reference, atol=1e-5, rtol=0)
    np.testing.assert_allclose(packed, padded, atol=1e-5, rtol=0)
    many = model.logits(PAIRS * 7, batch_size=8, pack=True).numpy()  # the runner's own rows and passes
    np.testing.assert_allclose(many, np.tile(reference, (7, 1)), atol=1e-5, rtol=0)
