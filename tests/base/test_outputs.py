"""The output rule (sbert.base.outputs): what a writer may write over, the lock, and a full disk."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sbert.base.outputs import (
    FILE,
    MODEL,
    OutputDiskFullError,
    OutputInUseError,
    OutputKind,
    OutputRefusedError,
    claim_output,
    lock_path,
)

REPO = Path(__file__).resolve().parents[2]
IN_PLACE = OutputKind("store", recognise=lambda folder: (folder / "manifest.json").is_file())

HOLDER = """
import sys, time
from pathlib import Path
from sbert.base.outputs import FILE, claim_output
with claim_output(sys.argv[1], FILE):
    Path(sys.argv[2]).write_text("held")
    time.sleep(60)
"""


def model_folder(path: Path) -> Path:
    (path / "1_Pooling").mkdir(parents=True)
    (path / "modules.json").write_text(json.dumps([{"idx": 0, "path": ""}, {"idx": 1, "path": "1_Pooling"}]))
    (path / "model.safetensors").write_bytes(b"weights")
    settings = {"__version__": {"sbert": "0.1.0"}}  # the marker only sbert writes
    (path / "config_sentence_transformers.json").write_text(json.dumps(settings))
    return path


def test_a_new_path_an_empty_folder_and_the_same_kind_are_written(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "new" / "model", tmp_path / "empty", model_folder(tmp_path / "old")):
        with claim_output(path, MODEL) as target:
            assert target == path.resolve()
    assert list((tmp_path / "new").iterdir()) == []  # the folder the lock was in; no lock left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "new", "old"]


def test_anything_else_is_refused_with_the_path_and_the_reason_and_kept(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    (tmp_path / "file.txt").write_text("keep me too")
    cases = [
        (tmp_path / "notes", MODEL, "holds no sbert model (mine.txt)"),
        (tmp_path / "file.txt", MODEL, "exists and is not a folder"),
        (tmp_path / "notes", FILE, "with a file: it is a folder"),
    ]
    for path, kind, reason in cases:
        with (
            pytest.raises(OutputRefusedError, match="refusing to replace") as error,
            claim_output(path, kind),
        ):
            pytest.fail("the block must not run")
        assert str(path) in str(error.value) and reason in str(error.value)
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    assert (tmp_path / "file.txt").read_text() == "keep me too"


def test_a_swapped_kind_refuses_files_it_did_not_write_an_in_place_kind_keeps_them(tmp_path: Path) -> None:
    model = model_folder(tmp_path / "model")
    (model / "notes.txt").write_text("mine")
    with (
        pytest.raises(OutputRefusedError, match=r"holds notes\.txt, not written by sbert"),
        claim_output(model, MODEL),
    ):
        pass
    store = tmp_path / "store"
    store.mkdir()
    (store / "manifest.json").write_text("{}")
    (store / "notes.txt").write_text("mine")
    with claim_output(store, IN_PLACE):
        pass
    assert (model / "notes.txt").read_text() == (store / "notes.txt").read_text() == "mine"


def test_a_file_output_replaces_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "old.npy").write_bytes(b"old")
    with claim_output(tmp_path / "old.npy", FILE) as target:
        target.write_bytes(b"new")
    assert (tmp_path / "old.npy").read_bytes() == b"new"


def test_a_symlink_yields_its_target_and_stays(tmp_path: Path) -> None:
    store = tmp_path / "real"
    store.mkdir()
    (store / "manifest.json").write_text("{}")
    (tmp_path / "link").symlink_to(store)
    with claim_output(tmp_path / "link", IN_PLACE) as target:
        assert target == store
        assert lock_path(store).exists() and not lock_path(tmp_path / "link").exists()
    assert (tmp_path / "link").is_symlink()


def test_a_model_is_not_written_through_a_symlink(tmp_path: Path) -> None:
    model = model_folder(tmp_path / "real")
    (tmp_path / "link").symlink_to(model)
    refused = r"link: refusing to write a model through a symbolic link \(to "
    with pytest.raises(OutputRefusedError, match=refused), claim_output(tmp_path / "link", MODEL):
        pytest.fail("the block must not run")
    assert (tmp_path / "link").is_symlink() and not lock_path(model).exists()


def test_a_model_sbert_did_not_write_is_refused_though_it_is_a_model(tmp_path: Path) -> None:
    st_model = model_folder(tmp_path / "st")
    settings = {"__version__": {"sentence_transformers": "6.2.0"}}  # what sentence-transformers writes
    (st_model / "config_sentence_transformers.json").write_text(json.dumps(settings))
    hf_model = tmp_path / "hf"
    hf_model.mkdir()
    (hf_model / "config.json").write_text("{}")
    for folder in (st_model, hf_model):
        with pytest.raises(OutputRefusedError, match="holds no sbert model"), claim_output(folder, MODEL):
            pytest.fail("the block must not run")


def test_a_second_process_is_refused_with_the_holders_pid_until_it_ends(tmp_path: Path) -> None:
    output, ready = tmp_path / "out.npy", tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(output), str(ready)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert holder.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        with (
            pytest.raises(
                OutputInUseError, match=f"{output}: in use by pid {holder.pid}, which is writing a file there"
            ),
            claim_output(output, FILE),
        ):
            pass
        # nor can the same command in another process: the CLI says so and exits 1
        run = subprocess.run(
            [sys.executable, "-c", HOLDER, str(output), str(tmp_path / "never")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode != 0 and f"in use by pid {holder.pid}" in run.stderr
        holder.send_signal(signal.SIGKILL)  # a killed writer's lock goes with it
        holder.wait(timeout=30)
        with claim_output(output, FILE):
            pass
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_nested_claim_by_the_same_writer_passes(tmp_path: Path) -> None:
    with claim_output(tmp_path / "out", MODEL), claim_output(tmp_path / "out", MODEL):
        assert lock_path(tmp_path / "out").exists()
    assert not lock_path(tmp_path / "out").exists()


def test_a_full_disk_is_reported_with_the_output_path(tmp_path: Path) -> None:
    with pytest.raises(OutputDiskFullError) as error, claim_output(tmp_path / "index", MODEL):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert error.value.errno == errno.ENOSPC
    assert f"while writing model {tmp_path / 'index'}" in str(error.value)
    assert "before is untouched" in str(error.value)
    with pytest.raises(RuntimeError, match="^boom$"), claim_output(tmp_path / "index", MODEL):
        raise RuntimeError("boom")  # other errors pass unchanged
