"""The runners' wrappers (the cross-encoder's pair transformer and head, a SPLADE body) have no mode
of their own: a run leaves the model in the mode it was in. Before, a wrapper built in training mode
made every run put the model's modules back in training mode (dropout on) afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.sparse.conftest import build_tiny_mlm, save_st_splade

from sbert import CrossEncoder, SparseEncoder


def _modes(model: object) -> set[bool]:
    return {module.training for module in model.modules()}  # type: ignore[attr-defined]


def test_scoring_leaves_the_cross_encoder_in_its_mode(tiny_model_dir: Path) -> None:
    model = CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu", precision="float32")
    model.logits([("a man", "a guitar")])
    assert _modes(model) == {False}
    model.train()
    model.logits([("a man", "a guitar")])
    assert _modes(model) == {True}


@pytest.mark.parametrize("backend", ["torch"])
def test_encoding_leaves_the_sparse_encoder_in_its_mode(tmp_path: Path, backend: str) -> None:
    path = save_st_splade(build_tiny_mlm(tmp_path / "mlm"), tmp_path / "splade")
    model = SparseEncoder.from_pretrained(path, device="cpu", precision="float32", backend=backend)
    model.encode(["a man plays the guitar"])
    assert _modes(model) == {False}
    model.train()
    model.encode(["a man plays the guitar"])
    assert _modes(model) == {True}
