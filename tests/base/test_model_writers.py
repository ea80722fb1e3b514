"""Every writer of a model folder follows the output rule (sbert.base.outputs, docs/guides/outputs.md):
a regular file, a symbolic link, or a folder holding anything sbert did not write is refused before
any work, the user's bytes unchanged; a folder sbert wrote before is replaced. Here the library's
writers, each kind's ``save`` and ``save_pretrained`` (with sentence-transformers' keywords); the
commands' ``--output`` are in tests/cli/test_model_outputs_cli.py."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.sparse.conftest import build_tiny_mlm

from sbert import CrossEncoder, SentenceEncoder, SparseEncoder
from sbert.base.outputs import OutputRefusedError

MINE = b"my own notes \x00\xff"


def _dense(tiny_model_dir: Path, _: Path) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu")


def _static(_: Path, tiny_static_dir: Path) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(tiny_static_dir, device="cpu")


def _sparse(tiny_model_dir: Path, _: Path) -> SparseEncoder:
    folder = tiny_model_dir.parent.parent / "writers-mlm"
    if not folder.exists():
        build_tiny_mlm(folder)
    return SparseEncoder.from_pretrained(folder, device="cpu")


def _cross(tiny_model_dir: Path, _: Path) -> CrossEncoder:
    return CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu")


KINDS: dict[str, Callable[[Path, Path], Any]] = {
    "dense": _dense,
    "static": _static,
    "sparse": _sparse,
    "cross": _cross,
}
SAVES: dict[str, Callable[[Any, Path], None]] = {
    "save": lambda model, path: model.save(path),
    "save_pretrained": lambda model, path: model.save_pretrained(  # sentence-transformers' keywords
        str(path), create_model_card=False, safe_serialization=True
    ),
}


@pytest.fixture(scope="module", params=list(KINDS))
def model(request: pytest.FixtureRequest, tiny_model_dir: Path, tiny_static_dir: Path) -> Any:
    return KINDS[request.param](tiny_model_dir, tiny_static_dir)


@pytest.fixture(params=list(SAVES))
def save(request: pytest.FixtureRequest) -> Callable[[Any, Path], None]:
    return SAVES[request.param]


def _refused(save: Callable[[Any, Path], None], model: Any, path: Path, *reasons: str) -> None:
    with pytest.raises(OutputRefusedError) as error:
        save(model, path)
    assert str(path) in str(error.value)
    for reason in reasons:
        assert reason in str(error.value)


def test_a_folder_holding_a_users_file_is_refused_and_the_file_kept(
    model: Any, save: Callable[[Any, Path], None], tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "notes.bin").write_bytes(MINE)
    _refused(save, model, folder, "notes.bin")
    assert os.listdir(folder) == ["notes.bin"] and (folder / "notes.bin").read_bytes() == MINE
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no staging folder or lock left beside it


def test_a_regular_file_is_refused_and_kept(
    model: Any, save: Callable[[Any, Path], None], tmp_path: Path
) -> None:
    (tmp_path / "model").write_bytes(MINE)
    _refused(save, model, tmp_path / "model", "not a folder")
    assert (tmp_path / "model").read_bytes() == MINE


def test_a_symbolic_link_is_refused_naming_it_and_its_target(
    model: Any, save: Callable[[Any, Path], None], tmp_path: Path
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    _refused(save, model, tmp_path / "link", "symbolic link", str(tmp_path / "real"))
    assert (tmp_path / "link").is_symlink() and os.listdir(tmp_path / "real") == []


def test_a_prior_sbert_output_is_replaced_and_an_empty_folder_written(
    model: Any, save: Callable[[Any, Path], None], tmp_path: Path
) -> None:
    (tmp_path / "out").mkdir()
    save(model, tmp_path / "out")  # an empty folder
    first = {path.name: path.stat().st_ino for path in (tmp_path / "out").iterdir()}
    save(model, tmp_path / "out")  # written by sbert: replaced, every entry anew
    second = {path.name: path.stat().st_ino for path in (tmp_path / "out").iterdir()}
    assert first.keys() == second.keys() and not set(first.values()) & set(second.values())
    reloaded = type(model).from_pretrained(tmp_path / "out", device="cpu")
    assert type(reloaded) is type(model)


def test_a_model_folder_sbert_did_not_write_is_refused(model: Any, tmp_path: Path) -> None:
    hf = tmp_path / "hf"  # a plain Hugging Face folder: config.json is no marker of sbert's
    hf.mkdir()
    (hf / "config.json").write_text('{"architectures": ["BertForMaskedLM"]}')
    (hf / "model.safetensors").write_bytes(MINE)
    st = tmp_path / "st"  # what sentence-transformers writes: its own version, not sbert's
    model.save(st)
    settings = st / "config_sentence_transformers.json"
    written = json.loads(settings.read_text()) if settings.is_file() else {}
    settings.write_text(json.dumps({**written, "__version__": {"sentence_transformers": "6.2.0"}}))
    (st / "sbert_cross_encoder.json").unlink(missing_ok=True)
    for folder in (hf, st):
        _refused(SAVES["save"], model, folder, "holds no sbert model")
    assert (hf / "model.safetensors").read_bytes() == MINE


def test_sentence_transformers_loads_what_sbert_saved_with_its_marker(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32")
    model.save(tmp_path / "out")
    theirs = SentenceTransformer(str(tmp_path / "out"), device="cpu").encode(["a man plays guitar"])
    np.testing.assert_allclose(model.encode(["a man plays guitar"]), theirs, atol=1e-5)
