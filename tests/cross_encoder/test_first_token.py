"""The cross-encoder's body computes its last layer for ``[CLS]`` alone: the same logits, less arithmetic."""

from __future__ import annotations

from pathlib import Path

import torch
from sentence_transformers import CrossEncoder as STCrossEncoder
from torch.utils.flop_counter import FlopCounterMode

from sbert import CrossEncoder
from sbert.inference.cpu import BF16_AND_VNNI

PAIRS = [
    ("a man plays guitar", "a man plays music"),
    ("rain", "the sun is big and happy and not sad at all in the park with the dog"),
    ("", "a woman is cooking"),
]


def test_the_last_layer_runs_for_the_first_token_alone(saved_cross_encoder: Path) -> None:
    model = CrossEncoder(saved_cross_encoder, device="cpu", precision="float32")
    transformer = model.input_module
    features = transformer.collate(transformer.tokenize(PAIRS).ids)  # padded: the rows differ in length
    batch, seq = features["input_ids"].shape
    with torch.inference_mode():
        with FlopCounterMode(display=False) as counted:
            first = transformer(features)  # (batch, 1, hidden)
        with FlopCounterMode(display=False) as whole_counted:
            whole = transformer.model(features["input_ids"], features["attention_mask"]).last_hidden_state
    assert first.shape == (batch, 1, whole.shape[-1])
    torch.testing.assert_close(first, whole[:, :1], atol=1e-6, rtol=0)
    # At least the last layer's feed-forward (hidden → intermediate → hidden) is left out for
    # every token but the first of each row.
    config = model.model.config
    feed_forward = 2 * 2 * config.hidden_size * config.intermediate_size  # FLOPs a token
    saved = whole_counted.get_total_flops() - counted.get_total_flops()
    assert saved >= batch * (seq - 1) * feed_forward, (saved, batch * (seq - 1) * feed_forward)


def test_the_compiled_graph_is_not_the_whole_bodys(saved_cross_encoder: Path) -> None:
    """The graph cache keys a graph by its module's repr: one traced from the whole body (every
    token's vector) must not be read back for the first-token body."""
    transformer = CrossEncoder(saved_cross_encoder, device="cpu").input_module
    assert "the first token's vector" in repr(transformer)


def test_bf16_on_the_cpu_runs_the_last_layer_for_the_first_token_alone(
    saved_cross_encoder: Path, first_token_layers: list[int]
) -> None:
    """PyTorch's bf16 path (FastBert, where bf16 is the CPU's default) computes the last layer for
    ``[CLS]`` alone, and its logits stay sentence-transformers' float32 logits within bf16's bound."""
    pairs = PAIRS * 3
    with torch.inference_mode():
        oracle = STCrossEncoder(str(saved_cross_encoder), device="cpu").predict(
            pairs, activation_fn=torch.nn.Identity(), convert_to_tensor=True
        )
    model = CrossEncoder(saved_cross_encoder, device="cpu", precision="auto", backend="torch")
    model.cpu_capabilities = BF16_AND_VNNI  # planned as on a CPU with native bf16, wherever this runs
    got = model.logits(pairs, batch_size=4)
    assert model.plan.precision == "bfloat16" and first_token_layers == [4, 4, 1]  # one a batch
    assert float((got - oracle).abs().max() / oracle.abs().max()) <= 3e-2
