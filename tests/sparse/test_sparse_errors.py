"""Clear errors: a dense model as SparseEncoder and a sparse one as SentenceEncoder, an MLM folder
without its head, ``max_active_dims`` that is not a positive whole number, an unknown output form."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import build_tiny_bert

from sbert import ModelLoadError, SentenceEncoder, SparseEncoder


@pytest.fixture(scope="module")
def model(tiny_mlm_dir: Path) -> SparseEncoder:
    return SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu")


def test_plain_dense_folder_is_refused(tiny_model_dir: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"not a SPLADE model.*BertModel.*SentenceEncoder"):
        SparseEncoder.from_pretrained(tiny_model_dir, device="cpu")


def test_a_plain_classifier_folder_is_refused_naming_the_cross_encoder(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """The kinds table names the class that loads the folder: a sequence classifier is a cross-encoder's."""
    from transformers import BertForSequenceClassification

    BertForSequenceClassification.from_pretrained(tiny_model_dir, num_labels=1).save_pretrained(
        tmp_path / "cls"
    )
    with pytest.raises(
        ModelLoadError,
        match=r"not a SPLADE model.*ForSequenceClassification.*load it with sbert.CrossEncoder",
    ):
        SparseEncoder.from_pretrained(tmp_path / "cls", device="cpu")


def test_sentence_transformers_dense_folder_is_refused(tiny_encoder: SentenceEncoder, tmp_path: Path) -> None:
    tiny_encoder.save(tmp_path / "dense")
    with pytest.raises(ModelLoadError, match=r"modules.json: a dense model.*SentenceEncoder"):
        SparseEncoder.from_pretrained(tmp_path / "dense", device="cpu")


def test_mlm_folder_without_its_head_is_refused(tmp_path: Path) -> None:
    folder = build_tiny_bert(tmp_path / "headless")  # BertModel weights: no cls.* head
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["BertForMaskedLM"]}))
    with pytest.raises(
        ModelLoadError, match=r"model.safetensors: the masked-language-model head is not in the file"
    ):
        SparseEncoder.from_pretrained(folder, device="cpu")


def test_sparse_folder_refused_by_sentence_encoder(
    model: SparseEncoder, router_dir: Path, tmp_path: Path
) -> None:
    model.save(tmp_path / "splade")
    for folder in (tmp_path / "splade", router_dir):
        with pytest.raises(ModelLoadError, match=r"model_type is SparseEncoder.*sbert.SparseEncoder"):
            SentenceEncoder.from_pretrained(folder, device="cpu")
    (tmp_path / "splade" / "config_sentence_transformers.json").unlink()  # only the modules tell it now
    with pytest.raises(ModelLoadError, match=r"lists a MLMTransformer module.*sbert.SparseEncoder"):
        SentenceEncoder.from_pretrained(tmp_path / "splade", device="cpu")


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "4"])
def test_max_active_dims_must_be_positive_whole_number(
    model: SparseEncoder, tiny_mlm_dir: Path, bad: object
) -> None:
    message = r"max_active_dims must be a positive whole number or None, got"
    with pytest.raises(ValueError, match=message):
        SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", max_active_dims=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        model.encode(["rain"], max_active_dims=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        model.max_active_dims = bad  # type: ignore[assignment]


def test_max_active_dims_takes_numpy_integers(model: SparseEncoder) -> None:
    """sentence-transformers takes any integer; np.int64(3) was refused as not a whole number."""
    model.max_active_dims = np.int64(3)  # type: ignore[assignment]
    assert model.max_active_dims == 3 and type(model.max_active_dims) is int
    vector = model.encode("rain", max_active_dims=np.int32(2))  # type: ignore[arg-type]
    assert vector.coalesce().values().numel() <= 2


def test_saved_max_active_dims_is_checked(model: SparseEncoder, tmp_path: Path) -> None:
    model.save(tmp_path / "m")
    settings = tmp_path / "m" / "config_sentence_transformers.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "max_active_dims": 0}))
    with pytest.raises(ValueError, match="max_active_dims"):
        SparseEncoder.from_pretrained(tmp_path / "m", device="cpu")


def test_bad_arguments(model: SparseEncoder) -> None:
    with pytest.raises(ValueError, match="sparse_format 'dense' is not one of torch, scipy, pairs"):
        model.encode(["rain"], sparse_format="dense")
    with pytest.raises(ValueError, match="top_k must be a positive whole number"):
        model.decode(model.encode("rain"), top_k=0)
    with pytest.raises(ValueError, match="unknown prompt_name 'nope'"):
        model.encode(["rain"], prompt_name="nope")
    with pytest.raises(TypeError, match="batch_size must be a whole number"):
        model.encode(["rain"], batch_size=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="similarity_fn_name 'manhattan'"):
        model.similarity_fn_name = "manhattan"
    with pytest.raises(TypeError, match="SparseEncoder takes modules or a model name or path"):
        SparseEncoder(3)  # type: ignore[arg-type]


def test_splade_pooling_must_follow_the_mlm(tiny_mlm_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(tiny_mlm_dir, folder)
    modules = [
        {
            "idx": 0,
            "name": "0",
            "path": "",
            "type": "sentence_transformers.sparse_encoder.models.MLMTransformer",
        }
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelLoadError, match="must be followed by SpladePooling"):
        SparseEncoder.from_pretrained(folder, device="cpu")


def test_lone_surrogates_are_replaced_as_the_dense_encoder_does(model: SparseEncoder) -> None:
    replaced = model.encode(["a?b"], convert_to_sparse_tensor=False)  # what valid_utf8 makes of it
    assert model.encode(["a\ud800b"], convert_to_sparse_tensor=False).equal(replaced)
