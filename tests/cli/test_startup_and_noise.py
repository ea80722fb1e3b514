"""Start-up and noise: ``sbert --help`` loads no heavy package, and a user sees only sbert's messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sbert.cli import SUBCOMMANDS

HEAVY = ("torch", "numpy", "transformers", "scipy", "sklearn", "openvino", "faiss", "pyarrow", "tqdm", "ray")
SRC = Path(__file__).resolve().parents[2] / "src"


def _heavy_after(code: str) -> list[str]:
    """The heavy packages a fresh interpreter has loaded after running ``code``."""
    # The verdict goes to stderr's last line: the code under test may print to stdout (--help does).
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment)
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()[-1].split() if done.stderr.strip() else []


def test_import_sbert_is_light_and_names_still_load() -> None:
    assert _heavy_after("import sbert; sbert.__version__") == []
    assert "torch" in _heavy_after("from sbert import SentenceEncoder")


@pytest.mark.parametrize(
    "name",
    [module.__name__.rsplit(".", 1)[1] for module in SUBCOMMANDS] + ["common"],
)
def test_cli_modules_import_no_heavy_package(name: str) -> None:
    # The package's __init__ imports every subcommand; load this one module on its own.
    code = (
        "import sys, types, sbert\n"
        f"package = types.ModuleType('sbert.cli'); package.__path__ = [{str(SRC / 'sbert' / 'cli')!r}]\n"
        "sys.modules['sbert.cli'] = package\n"
        f"import sbert.cli.{name}"
    )
    assert _heavy_after(code) == []


def test_help_and_version_load_no_heavy_package() -> None:
    code = "from sbert.cli import main\nfor argv in (['--help'], ['--version']):\n    try:\n        main(argv)\n    except SystemExit:\n        pass"
    assert _heavy_after(code) == []


def test_the_options_module_loads_no_heavy_package() -> None:
    assert _heavy_after("import sbert.base.options") == []


def test_every_named_choice_has_its_implementation() -> None:
    from sbert.base.options import METRICS, TRIPLET_DISTANCES
    from sbert.embeddings.similarity import MATRIX, PAIRWISE
    from sbert.losses.triplet import DISTANCE_FUNCTIONS

    assert tuple(MATRIX) == tuple(PAIRWISE) == METRICS
    assert tuple(DISTANCE_FUNCTIONS) == TRIPLET_DISTANCES


def _index_build(tiny_model_dir: Path, tmp_path: Path, *flags: str) -> str:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"sentence number {i} about a dog\n" for i in range(21)), encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(SRC), "SBERT_CACHE_DIR": "off"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sbert",
            "index",
            "build",
            "--corpus",
            str(corpus),
            "-o",
            str(tmp_path / "idx"),
            "-m",
            str(tiny_model_dir),
            *flags,
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_index_build_shows_only_sbert_messages(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    err = _index_build(tiny_model_dir, tmp_path)
    lines = err.strip().splitlines()
    # sbert's own two lines (what kind=auto chose, what was indexed); no FAISS loader lines, no bar.
    assert len(lines) == 2, err
    assert lines[0].startswith("kind auto: chose flat") and lines[1].startswith("indexed 21 sentences"), err
    verbose = _index_build(tiny_model_dir, tmp_path, "-v")
    assert "faiss" in verbose.lower() and "indexed 21 sentences" in verbose  # asked for: others' too


def test_the_command_leaves_a_callers_logging_as_it_found_it(tmp_path: Path) -> None:
    import logging

    from sbert.cli import main

    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = []  # a host program that configured no logging
    try:
        assert main(["data", "check", str(tmp_path)]) == 1
        assert (root.level, root.handlers) == (logging.WARNING, [])
    finally:
        root.handlers = saved
