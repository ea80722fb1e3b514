"""Commands that write, run against real folders: the output rule of sbert.base.outputs.

Each case of issue 38: a user's file beside an artifact, a folder of the user's, a file where a
folder goes, a symlink, two writers at once, and a full disk. Two writers at once run as real
processes (the lock names the other process); the other cases run ``sbert.cli.main`` in this
process, as the ``sbert`` script does, without the start-up of a new interpreter each time.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sbert.cli import main

pytest.importorskip("faiss")

REPO = Path(__file__).resolve().parents[2]
SENTENCES = ["a man plays guitar", "the dog runs in the park", "a cat eats food", "the rocket is in space"]


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}


def sbert(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``sbert`` run as another process."""
    command = [sys.executable, "-m", "sbert", *map(str, args)]
    return subprocess.run(command, env=environment(), capture_output=True, text=True, timeout=300)


@dataclass
class Run:
    returncode: int
    stderr: str


@pytest.fixture()
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """``sbert`` run in this process: its exit status and what it wrote to stderr."""

    def in_process(*args: str | Path) -> Run:
        capsys.readouterr()
        code = main([str(arg) for arg in args])
        return Run(code, capsys.readouterr().err)

    return in_process


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return path


def index_build(corpus: Path, output: Path, model: Path, sbert: Callable[..., Any] = sbert) -> Any:
    return sbert("index", "build", "--corpus", corpus, "-o", output, "-m", model, "--kind", "flat")


def count(index: Path) -> int:
    return int(json.loads((index / "manifest.json").read_text())["count"])


def test_index_rebuild_refuses_a_users_file_in_it_and_keeps_both(
    tmp_path: Path, corpus: Path, tiny_model_dir: Path, run: Callable[..., Run]
) -> None:
    assert index_build(corpus, tmp_path / "idx", tiny_model_dir, run).returncode == 0
    (tmp_path / "idx" / "notes.txt").write_text("mine")
    again = index_build(corpus, tmp_path / "idx", tiny_model_dir, run)
    assert again.returncode == 1
    assert f"{tmp_path / 'idx'}: refusing to replace it" in again.stderr and "notes.txt" in again.stderr
    assert (tmp_path / "idx" / "notes.txt").read_text() == "mine"
    assert count(tmp_path / "idx") == len(SENTENCES)


def test_index_build_through_a_symlink_replaces_its_target_and_keeps_the_link(
    tmp_path: Path, corpus: Path, tiny_model_dir: Path, run: Callable[..., Run]
) -> None:
    assert index_build(corpus, tmp_path / "real", tiny_model_dir, run).returncode == 0
    (tmp_path / "link").symlink_to(tmp_path / "real")
    corpus.write_text("\n".join(SENTENCES[:2]) + "\n", encoding="utf-8")
    assert index_build(corpus, tmp_path / "link", tiny_model_dir, run).returncode == 0
    assert (tmp_path / "link").is_symlink()
    assert count(tmp_path / "real") == 2
    assert sorted(path.name for path in tmp_path.iterdir()) == ["corpus.txt", "link", "real"]  # no .tmp


def test_a_second_writer_of_either_kind_is_refused_with_the_first_ones_pid(
    tmp_path: Path, corpus: Path, tiny_model_dir: Path
) -> None:
    output = tmp_path / "out"
    first = subprocess.Popen(  # holds the output while it waits for its sentences on stdin
        [sys.executable, "-m", "sbert", "encode", "-", "-o", f"{output}/", "-m", str(tiny_model_dir)],
        env=environment(),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / ".out.lock").exists():
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        for second in (
            sbert("encode", corpus, "-o", f"{output}/", "-m", tiny_model_dir),
            index_build(corpus, output, tiny_model_dir),
        ):
            assert second.returncode == 1
            assert f"{output}: in use by pid {first.pid}, which is writing a store there" in second.stderr
        _, errors = first.communicate("\n".join(SENTENCES) + "\n", timeout=120)
    finally:
        first.kill()
        first.wait(timeout=30)
    assert first.returncode == 0, errors
    assert json.loads((output / "manifest.json").read_text())["rows"] == len(SENTENCES)
    assert not (tmp_path / ".out.lock").exists()


def test_a_full_disk_during_an_index_rebuild_names_the_index_and_keeps_the_old_one(
    tmp_path: Path,
    corpus: Path,
    tiny_model_dir: Path,
    run: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sbert.index import files

    assert index_build(corpus, tmp_path / "idx", tiny_model_dir, run).returncode == 0

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_texts", full)
    failed = index_build(corpus, tmp_path / "idx", tiny_model_dir, run)
    assert failed.returncode == 1
    assert f"no space left on device while writing index {tmp_path / 'idx'}" in failed.stderr
    assert count(tmp_path / "idx") == len(SENTENCES)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["corpus.txt", "idx"]


def test_encode_to_a_file_refuses_a_folder_and_writes_through_a_symlink(
    tmp_path: Path, corpus: Path, tiny_model_dir: Path, run: Callable[..., Run]
) -> None:
    (tmp_path / "real.npy").write_bytes(b"old")
    (tmp_path / "link.npy").symlink_to(tmp_path / "real.npy")
    assert run("encode", corpus, "-o", tmp_path / "link.npy", "-m", tiny_model_dir).returncode == 0
    assert (tmp_path / "link.npy").is_symlink()
    assert (tmp_path / "real.npy").read_bytes().startswith(b"\x93NUMPY")


def test_distill_static_refuses_a_users_folder_or_file_before_any_work(
    tmp_path: Path, tiny_model_dir: Path, run: Callable[..., Run]
) -> None:
    (tmp_path / "userdir").mkdir()
    (tmp_path / "userdir" / "mine.txt").write_text("mine")
    (tmp_path / "afile").write_text("mine too")
    for output, reason in (
        (tmp_path / "userdir", "holds no sbert model (mine.txt)"),
        (tmp_path / "afile", "exists and is not a folder"),
    ):
        started = time.monotonic()
        refused = run(
            "distill", "static", "--teacher", tiny_model_dir, "--output", output, "--dimensions", "8"
        )
        assert refused.returncode == 1
        assert f"{output}: refusing to replace it" in refused.stderr and reason in refused.stderr
        assert time.monotonic() - started < 60  # refused up front, not after distilling
    assert (tmp_path / "userdir" / "mine.txt").read_text() == "mine"
    assert (tmp_path / "afile").read_text() == "mine too"


def test_encode_into_a_store_leaves_a_users_file_there_alone(
    tmp_path: Path, corpus: Path, tiny_model_dir: Path, run: Callable[..., Run]
) -> None:
    store = tmp_path / "store"
    assert run("encode", corpus, "-o", f"{store}/", "-m", tiny_model_dir, "--shard-size", "2").returncode == 0
    (store / "notes.txt").write_text("mine")
    again = run("encode", corpus, "-o", f"{store}/", "-m", tiny_model_dir, "--shard-size", "2", "--overwrite")
    assert again.returncode == 0, again.stderr
    assert (store / "notes.txt").read_text() == "mine"


def test_train_refuses_a_users_folder_and_its_own_output_once_a_users_file_is_in_it(
    tmp_path: Path, trainable_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sbert.cli import main

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{a} too\t0.5\n" for a in SENTENCES))
    (tmp_path / "userdir").mkdir()
    (tmp_path / "userdir" / "mine.txt").write_text("mine")
    train = [
        "train",
        "file",
        "--train",
        str(pairs),
        "--loss",
        "cosine-mse",
        "--base",
        str(trainable_model_dir),
    ]
    train += ["--epochs", "1", "--batch-size", "2", "--no-progress", "--device", "cpu", "--output"]
    assert main([*train, str(tmp_path / "userdir")]) == 1
    assert "holds no sbert training run (mine.txt)" in capsys.readouterr().err
    assert sorted(path.name for path in (tmp_path / "userdir").iterdir()) == ["mine.txt"]
    assert main([*train, str(tmp_path / "out")]) == 0
    (tmp_path / "out" / "mine.txt").write_text("mine")
    before = {path.name: path.stat().st_mtime_ns for path in (tmp_path / "out").iterdir()}
    assert main([*train, str(tmp_path / "out")]) == 1  # its own run's folder, but now with a user's file
    assert (
        "written again entry by entry, which also holds mine.txt, not written by sbert"
        in capsys.readouterr().err
    )
    assert {path.name: path.stat().st_mtime_ns for path in (tmp_path / "out").iterdir()} == before
    assert (tmp_path / "out" / "mine.txt").read_text() == "mine"


def test_data_download_reproduce_and_mine_negatives_refuse_a_users_folder(
    tmp_path: Path, run: Callable[..., Run]
) -> None:
    from experiments.pipeline import reproduce
    from experiments.scale import QUICK

    from sbert.base.outputs import OutputRefusedError
    from sbert.data.download import download

    (tmp_path / "userdir").mkdir()
    (tmp_path / "userdir" / "mine.txt").write_text("mine")
    with pytest.raises(OutputRefusedError, match="holds no sbert data directory"):
        download(tmp_path / "userdir", ["stsb"], mirror="http://127.0.0.1:9/")  # refused before any fetch
    with pytest.raises(OutputRefusedError, match="holds no sbert report"):
        reproduce(tmp_path / "userdir", QUICK, str(tmp_path), "sbert reproduce")
    (tmp_path / "pairs.tsv").write_text("anchor\tpositive\na\tb\n")
    (tmp_path / "out.tsv").mkdir()
    refused = run(
        "mine-negatives", tmp_path / "pairs.tsv", "-o", tmp_path / "out.tsv", "-m", tmp_path / "no-model"
    )
    assert refused.returncode == 1 and f"{tmp_path / 'out.tsv'} is a folder" in refused.stderr
    assert sorted(path.name for path in (tmp_path / "userdir").iterdir()) == ["mine.txt"]
