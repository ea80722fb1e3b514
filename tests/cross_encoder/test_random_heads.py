"""No silent random weights in a cross-encoder: a folder without a classification head gets a new
one with a WARNING naming its weights (sentence-transformers prints its load report); a saved head
of another size than ``num_labels`` asks is refused, as sentence-transformers refuses it; weights
missing from a saved cross-encoder, or of another shape, are refused by name."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file
from tests.sparse.conftest import build_tiny_mlm

from sbert.base.errors import ModelLoadError
from sbert.cross_encoder import CrossEncoder


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_mlm(tmp_path_factory.mktemp("mlm"))


def _without(source: Path, target: Path, drop: str) -> Path:
    """A copy of ``source`` whose weights lack those whose name starts with ``drop``."""
    target.mkdir()
    for path in source.iterdir():
        if path.is_file():
            (target / path.name).write_bytes(path.read_bytes())
    weights = load_file(str(source / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if not k.startswith(drop)}, str(target / "model.safetensors"))
    return target


def test_a_masked_lm_folder_gets_a_new_head_with_a_warning_naming_it(
    mlm_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from sentence_transformers import CrossEncoder as STCrossEncoder

    STCrossEncoder(str(mlm_dir), device="cpu")  # the oracle builds one too (and prints its load report)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        model = CrossEncoder(str(mlm_dir), device="cpu")
    assert model.num_labels == 1
    warned = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert any("new 1-output head" in r.message and "classifier.weight" in r.message for r in warned)
    assert any("bert.pooler.dense.weight" in r.message and str(mlm_dir) in r.message for r in warned)


def test_num_labels_other_than_the_saved_heads_is_refused_as_in_sentence_transformers(
    saved_cross_encoder: Path,
) -> None:
    from sentence_transformers import CrossEncoder as STCrossEncoder

    with pytest.raises(RuntimeError):
        STCrossEncoder(str(saved_cross_encoder), num_labels=1, device="cpu")
    for load in (CrossEncoder, CrossEncoder.from_pretrained):
        with pytest.raises(
            ModelLoadError, match=r"config\.json: the saved head has 3 outputs, and num_labels=1"
        ):
            load(saved_cross_encoder, num_labels=1, device="cpu")
    assert CrossEncoder(saved_cross_encoder, num_labels=3, device="cpu").num_labels == 3


def test_a_saved_cross_encoder_without_its_head_is_refused_naming_it(
    saved_cross_encoder: Path, tmp_path: Path
) -> None:
    folder = _without(saved_cross_encoder, tmp_path / "headless", "classifier.")
    with pytest.raises(
        ModelLoadError, match=r"its head is not in the file \(classifier\.bias, classifier\.weight\)"
    ):
        CrossEncoder(folder, device="cpu")


def test_encoder_weights_missing_are_refused_naming_them(saved_cross_encoder: Path, tmp_path: Path) -> None:
    folder = _without(saved_cross_encoder, tmp_path / "layerless", "bert.encoder.layer.0.output.dense.")
    with pytest.raises(
        ModelLoadError, match=r"model\.safetensors: 2 weights that config\.json asks for"
    ) as error:
        CrossEncoder.from_pretrained(folder, device="cpu")
    assert "encoder.layer.0" in str(error.value)
