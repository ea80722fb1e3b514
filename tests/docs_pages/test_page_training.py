"""The examples of docs/guides/training.md, in a file of their own so that xdist runs them beside the others
(see tests/docs_runner.py)."""

from pathlib import Path

from tests.docs_runner import REPO, run_page_examples, workdir  # noqa: F401  (the fixture)


def test_page_examples_run(workdir: Path, data_dir: Path) -> None:  # noqa: F811
    run_page_examples(REPO / "docs/guides/training.md", workdir)
