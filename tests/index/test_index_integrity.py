"""An index never overwrites what sbert did not write, checks every file it reads against its
manifest, refuses a store that changed under it, and leaves no staging directory behind a killed build."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sbert.cli import main

pytest.importorskip("faiss")

from tests.store.test_store import write_store

from sbert.index import IndexLoadError, VectorIndex
from sbert.index.building import StoreSource, build_index
from sbert.store import EmbeddingStore

REPO = Path(__file__).resolve().parents[2]


def vectors(n: int = 40, dim: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)


def test_an_output_that_is_not_an_index_is_refused_and_kept(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    (tmp_path / "file.txt").write_text("keep me too")
    index = VectorIndex.build(vectors(), kind="flat")
    for output in (tmp_path / "notes", tmp_path / "file.txt"):
        with pytest.raises(FileExistsError, match="refusing to replace"):
            index.save(output)
        # the CLI refuses before it loads a model (this one does not exist) or encodes anything
        corpus = tmp_path / "corpus.txt"
        corpus.write_text("a\nb\n")
        args = [
            "index",
            "build",
            "--corpus",
            str(corpus),
            "-o",
            str(output),
            "-m",
            str(tmp_path / "no-model"),
        ]
        assert main(args) == 1
        assert "refusing to replace" in capsys.readouterr().err
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    assert (tmp_path / "file.txt").read_text() == "keep me too"
    write_store(tmp_path / "s", vectors(), shard_size=10)
    with pytest.raises(FileExistsError, match="refusing to replace"):
        build_index(StoreSource(EmbeddingStore.open(str(tmp_path / "s"))), tmp_path / "notes", kind="flat")


def test_an_index_or_an_empty_folder_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    VectorIndex.build(vectors(), kind="flat", model_name="old").save(tmp_path / "empty")
    VectorIndex.build(vectors(seed=1), kind="flat", model_name="new").save(tmp_path / "empty")
    assert VectorIndex.load(tmp_path / "empty").model_name == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]


def test_an_edited_corpus_is_refused(tmp_path: Path) -> None:
    texts = [f"sentence {i}" for i in range(40)]
    VectorIndex.build(vectors(), texts=texts, kind="flat").save(tmp_path / "idx")
    corpus = tmp_path / "idx" / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("sentence 7", "sentence 8"))  # still valid JSON lines
    with pytest.raises(IndexLoadError, match=r"corpus\.jsonl: .*checksum does not match"):
        VectorIndex.load(tmp_path / "idx")


def test_damaged_ids_are_blamed_on_ids_npy(tmp_path: Path) -> None:
    VectorIndex.build(vectors(), texts=["t"] * 40, kind="flat").save(tmp_path / "idx")
    with (tmp_path / "idx" / "ids.npy").open("wb") as handle:  # a valid file with other ids
        np.save(handle, np.arange(40, dtype=np.int64)[::-1].copy())
    with pytest.raises(IndexLoadError, match=r"ids\.npy: .*checksum does not match"):
        VectorIndex.load(tmp_path / "idx")


def test_a_store_backed_index_refuses_a_changed_store(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    write_store(tmp_path / "s", vectors(23, 6), shard_size=10)
    assert (
        main(
            ["index", "build", "--store", str(tmp_path / "s"), "-o", str(tmp_path / "idx"), "--kind", "flat"]
        )
        == 0
    )
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["texts"]["store_digest"] == EmbeddingStore.open(str(tmp_path / "s")).digest
    assert VectorIndex.load(tmp_path / "idx").text(3) == "sentence 3"
    shutil.rmtree(tmp_path / "s")
    write_store(tmp_path / "s", vectors(23, 6, seed=5), shard_size=10)  # encoded again, other vectors
    with pytest.raises(IndexLoadError, match="the store changed since this index was built"):
        VectorIndex.load(tmp_path / "idx").text(3)


KILLED_SAVE = """
import sys, time
import numpy as np
from sbert.index import VectorIndex, files

def hang(staging, *args, **kwargs):
    print(staging, flush=True)
    time.sleep(600)

files.commit = hang
VectorIndex.build(np.ones((10, 4), dtype="float32"), kind="flat").save(sys.argv[1])
"""


def test_a_killed_save_leaves_a_staging_dir_that_the_next_save_removes(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_SAVE, str(tmp_path / "idx")], stdout=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    staging = Path(process.stdout.readline().strip())  # printed once the staging files are written
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert staging.is_dir() and str(process.pid) in staging.name
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{process.pid}"):
        time.sleep(0.05)
    VectorIndex.build(vectors(), kind="flat").save(tmp_path / "idx")
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]
