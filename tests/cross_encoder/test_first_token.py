"""The cross-encoder's body computes its last layer for ``[CLS]`` alone: the same logits, less arithmetic."""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from sbert import CrossEncoder

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
