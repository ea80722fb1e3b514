"""The slow test files start first under ``pytest -n auto --dist loadfile`` (see tests/schedule.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

from tests.schedule import SLOW_FILES, slow_files_first

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_slow_file_is_there() -> None:
    missing = [path for path in SLOW_FILES if not os.path.isfile(os.path.join(REPO, path))]
    assert missing == []
    assert len(set(SLOW_FILES)) == len(SLOW_FILES)


def test_slow_files_come_first_in_their_order_and_the_rest_keeps_its_own() -> None:
    nodeids = [
        "tests/a/test_x.py::test_1",
        f"{SLOW_FILES[1]}::test_2",
        "tests/b/test_y.py::test_3",
        f"{SLOW_FILES[0]}::test_4",
        f"{SLOW_FILES[1]}::test_5",
        "tests/a/test_x.py::test_6",
    ]
    ordered = [item.nodeid for item in slow_files_first([SimpleNamespace(nodeid=n) for n in nodeids])]
    assert ordered == [nodeids[3], nodeids[1], nodeids[4], nodeids[0], nodeids[2], nodeids[5]]


def test_the_workers_start_the_slow_files_first(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Under ``-n 2 --dist loadfile`` the first file each worker runs is one of the two slowest."""
    log = tmp_path / "order.log"
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "conftest.py").write_text(
        "import os\n"
        "from tests.schedule import pytest_collection_modifyitems, pytest_configure  # noqa: F401\n"
        "def pytest_runtest_setup(item):\n"
        f"    with open({str(log)!r}, 'a') as f:\n"
        "        f.write(os.environ['PYTEST_XDIST_WORKER'] + ' ' + item.nodeid + '\\n')\n"
    )
    many = "".join(f"def test_{i}():\n    pass\n" for i in range(5))
    for name in ("test_a.py", "test_b.py", "test_c.py"):
        (folder / name).write_text(many)  # more tests: xdist's default would start these first
    for slow in SLOW_FILES[:2]:  # one test each, as a documentation page's file
        (tmp_path / slow).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / slow).write_text("def test_slow():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    first: dict[str, str] = {}
    for line in log.read_text().splitlines():
        worker, nodeid = line.split(" ", 1)
        first.setdefault(worker, nodeid.split("::")[0])
    assert sorted(first.values()) == sorted(SLOW_FILES[:2]), first
