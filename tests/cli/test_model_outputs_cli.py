"""The commands that write a model folder (``sbert distill static``, ``sbert train file``,
``sbert train sparse``) follow the output rule before any work: a folder holding a user's file, a
regular file, a symbolic link and a plain Hugging Face model folder are refused, naming the path and
what is there, their bytes unchanged; a folder sbert wrote before is written again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.sparse.conftest import build_tiny_mlm

from sbert.cli import main

MINE = b"mine \x00\xff"


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_mlm(tmp_path_factory.mktemp("mlm"))


def _commands(tiny_model_dir: Path, mlm_dir: Path, tmp_path: Path) -> dict[str, list[str]]:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("sentence1\tsentence2\tscore\na man\ta man too\t0.5\nthe dog\tthe dog too\t0.5\n")
    run = ["--no-progress", "--device", "cpu"]
    return {
        "distill static": ["distill", "static", "--teacher", str(tiny_model_dir), "--dimensions", "8"],
        "train file": [
            *["train", "file", "--train", str(pairs), "--loss", "cosine-mse", "--base", str(tiny_model_dir)],
            *["--epochs", "1", "--batch-size", "2", *run],
        ],
        "train sparse": [
            "train",
            "sparse",
            "--base",
            str(mlm_dir),
            "--max-pairs",
            "4",
            "--batch-size",
            "2",
            *run,
        ],
    }


@pytest.mark.parametrize("command", ["distill static", "train file", "train sparse"])
def test_a_users_folder_a_file_a_link_and_a_plain_model_folder_are_refused_untouched(
    command: str,
    tiny_model_dir: Path,
    mlm_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = _commands(tiny_model_dir, mlm_dir, tmp_path)[command]
    (tmp_path / "userdir").mkdir()
    (tmp_path / "userdir" / "notes.bin").write_bytes(MINE)
    (tmp_path / "afile").write_bytes(MINE)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    hf = tmp_path / "hf"  # a plain transformers folder: its config.json is no training run's marker
    hf.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (hf / name).write_bytes((mlm_dir / name).read_bytes())
    cases = {
        tmp_path / "userdir": "holds no sbert",
        tmp_path / "afile": "not a folder",
        tmp_path / "link": f"through a symbolic link (to {tmp_path / 'real'})",
        hf: "holds no sbert",
    }
    for output, reason in cases.items():
        assert main([*argv, "--output", str(output)]) == 1
        error = capsys.readouterr().err
        assert str(output) in error and reason in error, error
    assert os.listdir(tmp_path / "userdir") == ["notes.bin"]
    assert (tmp_path / "userdir" / "notes.bin").read_bytes() == (tmp_path / "afile").read_bytes() == MINE
    assert os.listdir(tmp_path / "real") == []
    assert sorted(os.listdir(hf)) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert all((hf / name).read_bytes() == (mlm_dir / name).read_bytes() for name in os.listdir(hf))


def test_distill_static_writes_its_own_output_again(
    tiny_model_dir: Path, mlm_dir: Path, tmp_path: Path
) -> None:
    argv = _commands(tiny_model_dir, mlm_dir, tmp_path)["distill static"] + [
        "--output",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 0
    first = (tmp_path / "out" / "modules.json").stat().st_ino
    assert main(argv) == 0
    assert (tmp_path / "out" / "modules.json").stat().st_ino != first  # replaced
