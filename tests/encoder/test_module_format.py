"""Each module owns its format: a module type defined here, and nowhere in sbert, is saved in a model
and read back, its type in modules.json and its settings in its own folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor

from sbert import ModelLoadError, SentenceEncoder
from sbert.modules import Module, Normalize


class Scale(Module):
    """Multiplies every sentence vector by ``factor``: a layer after pooling."""

    st_type = "tests.toy.Scale"
    config_keys = ("factor",)

    def __init__(self, factor: float = 1.0) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, embeddings: Tensor) -> Tensor:
        return embeddings * self.factor


def test_a_module_type_defined_outside_sbert_saves_and_loads(
    tiny_encoder: SentenceEncoder, tmp_path: Path
) -> None:
    model = SentenceEncoder(tiny_encoder.input_module, tiny_encoder.pooling, [Scale(3.0), Normalize()])
    model.save(tmp_path / "toy")
    listed = json.loads((tmp_path / "toy" / "modules.json").read_text())
    assert [(e["path"], e["type"]) for e in listed[1:3]] == [("1_Pooling", "sentence_transformers.models.Pooling"),
                                                              ("2_Scale", "tests.toy.Scale")]  # fmt: skip
    assert json.loads((tmp_path / "toy" / "2_Scale" / "config.json").read_text()) == {"factor": 3.0}
    again = SentenceEncoder.from_pretrained(
        tmp_path / "toy", device="cpu", precision="float32", backend="torch"
    )
    assert isinstance(again.layers[0], Scale) and again.layers[0].factor == 3.0
    sentences = ["a man plays the guitar", "rain"]
    expected = model.encode(sentences, compute_precision="float32", normalize_embeddings=False)
    np.testing.assert_allclose(again.encode(sentences), expected, atol=1e-6, rtol=0)
    # before Normalize, the layer's factor shows
    pooled = again.forward(again.collate(again.token_ids(sentences).ids), normalize=False)
    unscaled = tiny_encoder.forward(
        tiny_encoder.collate(tiny_encoder.token_ids(sentences).ids), normalize=False
    )
    torch.testing.assert_close(pooled, 3.0 * unscaled)


def test_an_unregistered_module_type_is_still_refused(tmp_path: Path, tiny_encoder: SentenceEncoder) -> None:
    tiny_encoder.save(tmp_path / "m")
    modules = json.loads((tmp_path / "m" / "modules.json").read_text())
    modules[1]["type"] = "tests.toy.Unknown"
    (tmp_path / "m" / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(
        ModelLoadError, match=r"'tests.toy.Unknown' is not supported \(sbert reads Transformer, "
    ):
        SentenceEncoder.from_pretrained(tmp_path / "m")
