"""What the cross-encoder tests share."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sbert import CrossEncoder
from sbert.inference.fast_bert import FastBert


@pytest.fixture(scope="module")
def saved_cross_encoder(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved 3-label cross-encoder on the tiny random BERT (its new head seeded: the same weights
    every run), which sentence-transformers loads too."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("cross") / "ce"
    CrossEncoder.from_pretrained(tiny_model_dir, num_labels=3, device="cpu").save(folder)
    return folder


@pytest.fixture
def first_token_layers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each call of ``FastBert.first_token_layer`` (the last layer for ``[CLS]`` alone) appends the
    batch's size to this list; the layer still runs."""
    calls: list[int] = []
    layer = FastBert.first_token_layer

    def counted(fast: FastBert, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        calls.append(x.shape[0])
        return layer(fast, x, keep)

    monkeypatch.setattr(FastBert, "first_token_layer", counted)
    return calls
