"""Atomic writes: a complete old or new copy at every instant (kill -9 included), modes, leftovers."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sbert.base import files
from sbert.base.files import atomic_path, replace_dir, staging_dir

SRC = Path(__file__).resolve().parents[2] / "src"

# Children load sbert/base/files.py alone (it needs only the standard library): importing the package
# would load torch, seconds per child.
LOAD_FILES = f"""
import importlib.util
spec = importlib.util.spec_from_file_location("files", {str(SRC / "sbert" / "base" / "files.py")!r})
files = importlib.util.module_from_spec(spec)
spec.loader.exec_module(files)
"""

# The child pauses after every step replace_dir takes on the file system (a rename, or the exchange)
# and announces it, so the test can kill it at the exact moment between two steps.
REPLACE_IN_CHILD = """
import os, sys, time
from pathlib import Path

target, ready = (Path(arg) for arg in sys.argv[1:])
new = files.staging_dir(target)
for number in range(5):
    (new / f"part-{number}.txt").write_text(f"new {number}")

def pause(*_):
    ready.write_text("in the window")
    time.sleep(60)

real_replace = os.replace
def replace_then_pause(source, destination):
    real_replace(source, destination)
    pause()

os.replace = replace_then_pause
files._between_steps = pause
files.replace_dir(new, target)
"""

WRITE_IN_CHILD = """
import sys, time
target, ready = sys.argv[1:]
with files.atomic_path(target) as tmp:
    tmp.write_text("half")
    (files.staging_dir(target) / "part").write_text("half")
    open(ready, "w").write("writing")
    time.sleep(60)
"""


def _child(script: str, *args: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", LOAD_FILES + script, *map(str, args)])


def _kill_when_ready(child: subprocess.Popen[bytes], ready: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    try:
        while not ready.exists():
            assert child.poll() is None, "the child finished without pausing between two steps"
            assert time.monotonic() < deadline, "the child never paused"
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


def _fill(folder: Path, text: str, count: int = 5) -> Path:
    folder.mkdir()
    for number in range(count):
        (folder / f"part-{number}.txt").write_text(f"{text} {number}")
    return folder


def _contents(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(folder.iterdir())}


@pytest.fixture()
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_kill_inside_replace_dir_leaves_a_complete_copy(tmp_path: Path) -> None:
    if files._renameat2() is None:
        pytest.skip("no atomic exchange on this platform: replace_dir has a window there")
    target = _fill(tmp_path / "index", "old")
    old = _contents(target)
    new = {name: text.replace("old", "new") for name, text in old.items()}

    _kill_when_ready(_child(REPLACE_IN_CHILD, target, tmp_path / "ready"), tmp_path / "ready")

    assert target.is_dir(), "killed between the steps, the path held nothing"
    assert _contents(target) in (old, new)
    # The killed writer's leftover (the copy it swapped out) goes with the next write of the target.
    assert len(list(tmp_path.glob(".index.*.tmp"))) == 1
    replace_dir(_fill(tmp_path / "newer", "newer"), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "ready"]
    assert _contents(target)["part-0.txt"] == "newer 0"


def test_exchange_swaps_two_directories(tmp_path: Path) -> None:
    if files._renameat2() is None:
        pytest.skip("no renameat2 here")
    first, second = _fill(tmp_path / "a", "a", 1), _fill(tmp_path / "b", "b", 1)
    assert files._exchange(first, second)
    assert (first / "part-0.txt").read_text() == "b 0" and (second / "part-0.txt").read_text() == "a 0"


def test_without_an_exchange_replace_dir_still_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "_exchange", lambda first, second: False)  # e.g. macOS, or a FUSE mount
    target = _fill(tmp_path / "model", "old")
    replace_dir(_fill(tmp_path / "staged", "new"), target)
    assert _contents(target)["part-0.txt"] == "new 0"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_temporaries_of_a_killed_writer_are_removed_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    _kill_when_ready(_child(WRITE_IN_CHILD, target, tmp_path / "ready"), tmp_path / "ready")
    left = sorted(p.name for p in tmp_path.glob(".out.jsonl.*.tmp"))
    assert len(left) == 2  # a file and a staging directory, named after the dead writer

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / f".out.jsonl.{sleeper.pid}.abcdefgh.tmp"  # a live writer's: kept
        live.write_text("still writing")
        unrelated = tmp_path / ".out.jsonl.backup"
        unrelated.write_text("not ours")
        with atomic_path(target) as tmp:
            tmp.write_text("complete")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            ["out.jsonl", "ready", live.name, unrelated.name]
        )
    finally:
        sleeper.kill()
        sleeper.wait()
    assert target.read_text() == "complete"


@pytest.mark.usefixtures("umask_022")
def test_new_files_follow_the_umask_and_replaced_ones_keep_their_mode(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.txt"
    files.write_text_atomic(fresh, "a")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644

    os.umask(0o077)
    files.write_text_atomic(fresh, "b")  # replaces a 0644 file: stays 0644
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    shared = tmp_path / "shared.txt"
    shared.write_text("x")
    shared.chmod(0o664)
    with atomic_path(shared) as tmp:
        tmp.write_text("y")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664


@pytest.mark.usefixtures("umask_022")
def test_directories_follow_the_umask_and_replaced_ones_keep_their_mode(tmp_path: Path) -> None:
    target = tmp_path / "index"
    staged = staging_dir(target)
    assert stat.S_IMODE(staged.stat().st_mode) == 0o700  # private while it is being written
    replace_dir(staged, target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    target.chmod(0o750)
    replace_dir(staging_dir(target), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
