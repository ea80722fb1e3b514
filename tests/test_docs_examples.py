"""Every example in the documentation runs, so the documentation cannot drift from the code.

- the ``>>>`` examples of every module in ``src/sbert`` (doctest, one test per module);
- the ```` ```python ```` blocks of ``README.md`` and of every page in ``docs/``: the blocks of a
  page run in order in one namespace, in a fresh directory holding a few sample files, with the
  shared data folder at ``../shared/data`` as the pages write it;
- the ```` ```bash ```` blocks of the same pages: every ``sbert`` command in them is parsed by
  :func:`sbert.cli.build_parser` (a renamed or removed flag fails here), and the blocks marked
  ``<!-- example: run -->`` are run with bash, in page order between the Python blocks.

A block that cannot run here is marked ``<!-- example: skip (reason) -->`` on the line above it:
the reason is required and the test reports it. ``python tests/test_docs_examples.py`` prints the
counts. The pages and modules whose examples take minutes run from files of their own in
``tests/docs_pages/`` (``OWN_FILE`` of ``tests/docs_runner.py`` says why); this file runs the others.
"""

from __future__ import annotations

import doctest
import importlib
import shlex
from pathlib import Path

import pytest
from tests.docs_runner import (
    OWN_FILE,
    PAGES,
    REPO,
    STANDALONE,
    blocks,
    modules,
    page_name,
    run_docstring_examples,
    run_page_examples,
    sbert_commands,
    workdir,  # noqa: F401  (the fixture)
)


def _example_pages() -> list[Path]:
    return [page for page in PAGES if any(b.lang in {"python", "bash"} for b in blocks(page))]


# ---------------------------------------------------------------------------------------------------
# docstrings


@pytest.mark.parametrize("name", [name for name in modules() if name not in OWN_FILE])
def test_docstring_examples(name: str, workdir: Path) -> None:  # noqa: F811  (the fixture)
    run_docstring_examples(name, workdir)


def test_every_doctest_skip_says_why() -> None:
    """A ``# doctest: +SKIP`` carries its reason: a "Not run by the tests: ..." sentence in the
    docstring above the example."""
    unexplained = []
    for path in sorted((REPO / "src" / "sbert").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").split("\n")
        for number, line in enumerate(lines, 1):
            if "doctest: +SKIP" not in line:
                continue
            above = lines[:number]
            start = max(i for i, text in enumerate(above) if '"""' in text)  # the docstring's opening
            if "not run by the tests" not in "\n".join(above[start:]).lower():
                unexplained.append(f"{path.relative_to(REPO)}:{number}")
    assert not unexplained, unexplained


# ---------------------------------------------------------------------------------------------------
# pages


def test_every_page_has_parsed_blocks() -> None:
    assert len(_example_pages()) >= 10


def test_markers_name_a_reason() -> None:
    for page in PAGES:
        for block in blocks(page):
            if block.marker == "skip":
                assert block.reason, f"{block.where}: a skipped example needs a reason"
            if block.marker == "run":
                assert block.lang == "bash", f"{block.where}: only bash blocks take 'run'"


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_commands_parse(page: Path) -> None:
    """Every ``sbert`` command shown in a bash block is one the parser accepts."""
    from sbert.cli import build_parser

    parser = build_parser()
    for block in blocks(page):
        if block.lang != "bash":
            continue
        for argv in sbert_commands(block.code):
            try:
                parser.parse_args(argv)
            except SystemExit as error:
                if error.code not in (0, None):
                    pytest.fail(f"{block.where}: sbert {shlex.join(argv)} does not parse")


@pytest.mark.parametrize(
    "page",
    [
        p
        for p in PAGES
        if page_name(p) not in OWN_FILE and any(b.lang == "python" or b.marker == "run" for b in blocks(p))
    ],
    ids=page_name,
)
def test_page_examples_run(page: Path, workdir: Path, data_dir: Path) -> None:  # noqa: F811
    """The page's examples (see :func:`tests.docs_runner.run_page_examples`)."""
    run_page_examples(page, workdir)


def test_the_slow_pages_and_modules_run_from_their_own_files() -> None:
    """Each entry of ``OWN_FILE`` names a page or module there is, and its file runs it."""
    names = {page_name(page) for page in PAGES} | set(modules())
    for name, file in OWN_FILE.items():
        assert name in names, f"{name}: no such page or module"
        assert f'"{name}"' in (REPO / file).read_text(encoding="utf-8"), f"{file} does not run {name}"


def test_the_newcomer_pages_run_every_block_alone() -> None:
    """getting-started and the sparse guide: their Python blocks and command-line blocks run here."""
    for page in STANDALONE:
        found = blocks(page)
        assert any(b.lang == "bash" and b.marker == "run" for b in found), page
        assert sum(b.lang == "python" and b.marker != "skip" for b in found) >= 2, page


def counts() -> dict[str, object]:
    """What runs: the figures the documentation's closing notes quote."""
    python = [b for p in PAGES for b in blocks(p) if b.lang == "python"]
    bash = [b for p in PAGES for b in blocks(p) if b.lang == "bash"]
    doctests = 0
    for name in modules():
        for test in doctest.DocTestFinder().find(importlib.import_module(name)):
            doctests += len(test.examples)
    return {
        "python blocks run": sum(b.marker != "skip" for b in python),
        "bash blocks run": sum(b.marker == "run" for b in bash),
        "sbert commands parsed": sum(len(sbert_commands(b.code)) for b in bash),
        "docstring examples (>>> lines)": doctests,
        "skipped": [f"{b.where} ({b.lang}): {b.reason}" for b in python + bash if b.marker == "skip"],
    }


if __name__ == "__main__":
    for key, value in counts().items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"  {item}")
        else:
            print(f"{key}: {value}")
