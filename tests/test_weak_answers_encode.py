"""The weak answers of issue 54 on the encoders' surface, sentence-transformers 6.2 the oracle: what
``encode([])`` returns in every output form, numpy integers for ``max_active_dims``, an empty model
folder named as such, and ``CrossEncoder.predict(None)`` refused with the argument named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from sbert import CrossEncoder, SentenceEncoder, SparseEncoder
from sbert.base.errors import ModelLoadError

st = pytest.importorskip("sentence_transformers")


def _same_answer(ours: Any, theirs: Any) -> None:
    """Of the same type, shape, dtype and (for a tensor) layout."""
    assert type(ours) is type(theirs)
    if isinstance(theirs, (np.ndarray, torch.Tensor)):
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == theirs.dtype
    if isinstance(theirs, torch.Tensor):
        assert ours.layout == theirs.layout
    else:
        assert len(ours) == len(theirs)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"convert_to_tensor": True},
        {"convert_to_numpy": False},
        {"normalize_embeddings": True},
        {"precision": "int8"},
    ],
)
def test_dense_encode_of_nothing_answers_as_sentence_transformers(
    tiny_model_dir: Path, options: dict
) -> None:
    ours = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32", backend="torch")
    theirs = st.SentenceTransformer(str(tiny_model_dir), device="cpu")
    _same_answer(ours.encode([], **options), theirs.encode([], **options))
    _same_answer(ours.encode_query([], **options), theirs.encode_query([], **options))


@pytest.fixture(scope="module")
def splade_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.cli.test_cli_sparse_search import build_tiny_splade

    return build_tiny_splade(tiny_model_dir, tmp_path_factory.mktemp("splade") / "m", seed=1)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"convert_to_tensor": False},
        {"convert_to_sparse_tensor": False},
        {"convert_to_tensor": False, "convert_to_sparse_tensor": False},
        {"max_active_dims": 3},
    ],
)
def test_sparse_encode_of_nothing_answers_as_sentence_transformers(splade_dir: Path, options: dict) -> None:
    ours = SparseEncoder.from_pretrained(splade_dir, device="cpu")
    theirs = st.SparseEncoder(str(splade_dir), device="cpu")
    for method in ("encode", "encode_query", "encode_document"):
        _same_answer(getattr(ours, method)([], **options), getattr(theirs, method)([], **options))


def test_max_active_dims_takes_numpy_integers(splade_dir: Path) -> None:
    ours = SparseEncoder.from_pretrained(splade_dir, device="cpu")
    theirs = st.SparseEncoder(str(splade_dir), device="cpu")
    got = ours.encode(["a man plays guitar"], max_active_dims=np.int64(3))
    expected = theirs.encode(["a man plays guitar"], max_active_dims=np.int64(3))
    assert got._nnz() == 3
    torch.testing.assert_close(got.to_dense(), expected.to_dense(), atol=1e-5, rtol=1e-5)
    for refused in (True, 3.0, np.float64(3.0), "3"):
        with pytest.raises(ValueError, match="max_active_dims must be a positive whole number"):
            ours.encode(["a man"], max_active_dims=refused)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "load",
    [SentenceEncoder.from_pretrained, SparseEncoder.from_pretrained, SparseEncoder, CrossEncoder],
    ids=["dense", "sparse", "sparse-constructor", "cross-encoder"],
)
def test_an_empty_folder_is_named_empty_not_blamed_on_architectures(load: Any, tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(ModelLoadError) as error:
        load(folder)
    message = str(error.value)
    assert f"{folder / 'config.json'}: missing" in message and "architectures" not in message


@pytest.mark.parametrize("bad", [None, 42, 3.5])
def test_predict_of_no_pairs_names_the_argument(tiny_model_dir: Path, tmp_path: Path, bad: Any) -> None:
    from tests.cross_encoder.test_st_oracle import build_classifier

    model = CrossEncoder(build_classifier(tiny_model_dir, tmp_path / "ce", 1), device="cpu")
    with pytest.raises(
        TypeError,
        match=f"inputs must be a \\(str, str\\) pair or a list of such pairs, got {type(bad).__name__}",
    ):
        model.predict(bad)


def test_the_command_line_keeps_the_width_of_no_vectors(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sbert.cli import main

    monkeypatch.setenv("SBERT_CACHE_DIR", "off")
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    assert main(["encode", str(empty), "-o", str(tmp_path / "out.npy"), "-m", str(tiny_model_dir)]) == 0
    assert np.load(tmp_path / "out.npy").shape == (0, 32)  # a file of no rows, of the model's width
    assert main(["search", "q", "--corpus", str(empty), "-m", str(tiny_model_dir)]) == 1
    assert f"{empty}: no sentences to search" in capsys.readouterr().err
