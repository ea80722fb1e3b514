"""The docstring examples of sbert.static.distill, in a file of their own so that xdist runs them beside the
others (see tests/docs_runner.py)."""

from pathlib import Path

from tests.docs_runner import run_docstring_examples, workdir  # noqa: F401  (the fixture)


def test_docstring_examples(workdir: Path) -> None:  # noqa: F811
    run_docstring_examples("sbert.static.distill", workdir)
