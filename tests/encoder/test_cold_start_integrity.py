"""The start-up cache serves nothing it has not checked: its entry (the tokenizer copy included)
carries a SHA-256, and the model folder is hashed through symbolic links (sbert.encoder.cold_start)."""

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.cli import main
from sbert.encoder import cold_start
from sbert.encoder.hub import resolve_model_path

TEXTS = ["a man plays guitar", "the dog runs in the park", "rain falls"]


@pytest.fixture()
def st_model(tiny_model_dir: Path, tmp_path: Path) -> Path:
    """The tiny model in sentence-transformers' layout (a ``1_Pooling/`` folder), mean pooling."""
    loaded = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu")
    path = tmp_path / "model"
    loaded.save(path)
    assert (path / "1_Pooling" / "config.json").is_file()
    return path


@pytest.fixture()
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("SBERT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _encode(model: Path, folder: Path, name: str) -> np.ndarray:
    (folder / "in.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = folder / f"{name}.npy"
    assert main(["encode", str(folder / "in.txt"), "-o", str(out), "--model", str(model)]) == 0
    return np.load(out)


def _request(model: Path) -> cold_start.ColdRequest:
    return cold_start.ColdRequest(str(resolve_model_path(model)), "auto", "auto", None, 32, None)


def _full(model: Path) -> np.ndarray:
    return SentenceEncoder.from_pretrained(model, device="cpu").encode(TEXTS)


def test_an_altered_tokenizer_copy_is_not_served(st_model: Path, cache: Path, tmp_path: Path) -> None:
    _encode(st_model, tmp_path, "first")
    (entry_file,) = (cache / cold_start.ENTRY_FOLDER).glob("*.json")
    stored = json.loads(entry_file.read_text(encoding="utf-8"))
    entry = stored.get("entry", stored)  # wherever the entry keeps the tokenizer
    tokenizer = json.loads(entry["tokenizer"])
    vocab = tokenizer["model"]["vocab"]
    vocab["man"], vocab["dog"] = vocab["dog"], vocab["man"]  # still valid JSON, other ids
    entry["tokenizer"] = json.dumps(tokenizer)
    entry_file.write_text(json.dumps(stored), encoding="utf-8")
    assert cold_start.encode(_request(st_model), TEXTS) is None
    np.testing.assert_array_equal(_encode(st_model, tmp_path, "second"), _full(st_model))
    assert cold_start.encode(_request(st_model), TEXTS) is not None  # written again, intact


def test_an_entry_missing_its_checksum_is_not_served(st_model: Path, cache: Path, tmp_path: Path) -> None:
    _encode(st_model, tmp_path, "first")
    (entry_file,) = (cache / cold_start.ENTRY_FOLDER).glob("*.json")
    stored = json.loads(entry_file.read_text(encoding="utf-8"))
    entry_file.write_text(json.dumps(stored["entry"]), encoding="utf-8")  # the unsealed entry
    assert cold_start.encode(_request(st_model), TEXTS) is None


def test_a_change_behind_a_linked_pooling_folder_is_not_served(
    st_model: Path, cache: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "pooling-elsewhere"
    shutil.move(st_model / "1_Pooling", elsewhere)
    os.symlink(elsewhere, st_model / "1_Pooling", target_is_directory=True)
    before = _encode(st_model, tmp_path, "before")
    config = json.loads((elsewhere / "config.json").read_text(encoding="utf-8"))
    assert config["pooling_mode_mean_tokens"]
    config["pooling_mode_mean_tokens"], config["pooling_mode_cls_token"] = False, True
    (elsewhere / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert cold_start.encode(_request(st_model), TEXTS) is None
    after = _encode(st_model, tmp_path, "after")
    assert not np.allclose(after, before, atol=1e-3)
    np.testing.assert_array_equal(after, _full(st_model))


def test_a_linked_file_is_hashed_by_its_content(st_model: Path, tmp_path: Path) -> None:
    weights = tmp_path / "weights.safetensors"
    shutil.move(st_model / "model.safetensors", weights)
    os.symlink(weights, st_model / "model.safetensors")
    before = cold_start.files_digest(st_model)
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    assert before is not None and cold_start.files_digest(st_model) not in (None, before)


def test_a_link_cycle_gives_no_digest(st_model: Path) -> None:
    os.symlink(st_model, st_model / "loop", target_is_directory=True)
    assert cold_start.files_digest(st_model) is None  # no shortcut, and no endless walk


def test_an_unreadable_sub_folder_gives_no_digest(st_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.scandir

    def refusing(path: str = ".") -> Any:
        if str(path).endswith("1_Pooling"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", refusing)
    assert cold_start.files_digest(st_model) is None  # not a digest that leaves the folder out
