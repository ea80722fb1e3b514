"""How tests/test_docs_examples.py and the files of tests/docs_pages/ run the documentation's examples.

A page or module whose examples take a minute or more is run from a file of its own in
``tests/docs_pages/`` (:data:`OWN_FILE`): pytest-xdist's ``--dist loadfile`` (the README's test
command) keeps each test file on one worker, so with every page in one file that worker ran about
twelve minutes of examples while the others had finished.
"""

from __future__ import annotations

import doctest
import importlib
import io
import os
import pkgutil
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import sbert

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
MARKER = re.compile(r"^<!-- example: (run|skip)(?: \((.+)\))? -->$")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")

SAMPLE_FILES = {
    "sentences.txt": "A man is playing a guitar.\nSomeone plays an instrument.\nIt is raining.\n",
    "my_sentences.txt": "How do I reset my password?\nThe invoice is overdue.\nShipping takes three days.\n",
    "corpus.txt": "A man is playing a guitar.\nThe rocket launched the satellite.\nSomeone plays an instrument.\n",
    "reviews.csv": "id,text\n1,Great sound and easy to play.\n2,The strings broke after a week.\n",
    "pairs.tsv": "sentence1\tsentence2\tscore\nA man plays a guitar.\tSomeone plays music.\t4.2\n"
    "A dog runs.\tIt rains.\t0.3\n",
    "dev.tsv": "sentence1\tsentence2\tscore\nA woman sings.\tSomeone is singing.\t4.6\n"
    "A car drives.\tA cat sleeps.\t0.2\n",
    "my-text.txt": "A man is playing a guitar.\nThe rocket launched the satellite.\n",
}


# Pages a newcomer follows block by block: each block runs alone (a fresh namespace), in a folder
# without the sample files above, so a block must make the files it reads (issue 54).
STANDALONE = {REPO / "docs" / "getting-started.md", REPO / "docs" / "guides" / "sparse.md"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str  # "", "run" or "skip"
    reason: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, with the marker on the line above each (if any)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, lang = opening.group(1), opening.group(2)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        code = "\n".join(line[len(indent) :] for line in lines[i + 1 : end]) + "\n"
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marked = MARKER.match(previous)
        marker, reason = (marked.group(1), marked.group(2) or "") if marked else ("", "")
        found.append(Block(page, i + 1, lang, code, marker, reason))
        i = end + 1
    return found


def sbert_commands(script: str) -> list[list[str]]:
    """The argument lists of the ``sbert`` commands in a shell script (``sbert ...``, ``python -m
    sbert ...``, ``torchrun ... -m sbert ...``), without redirections, pipes and comments."""
    logical = re.sub(r"\\\n", " ", script)
    commands: list[list[str]] = []
    for line in logical.split("\n"):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        segment: list[str] = []
        for token in [*tokens, ";"]:
            if token in {"&&", "||", ";", "|", "&"}:
                commands += _sbert_argv(segment)
                segment = []
            else:
                segment.append(token)
    return commands


def _sbert_argv(segment: list[str]) -> list[list[str]]:
    words: list[str] = []
    skip_next = False
    for token in segment:
        if skip_next:
            skip_next = False
        elif re.fullmatch(r"\d?[<>]+", token):
            skip_next = True  # a redirection and its target
        else:
            words.append(token)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words = words[1:]  # VAR=value before the command
    for i, word in enumerate(words):
        if word == "sbert" and (i == 0 or words[i - 1] == "-m"):
            return [words[i + 1 :]]
    return []


# The pages and modules run from a file of their own (see the module docstring), with that file.
OWN_FILE = {
    "docs/guides/training.md": "tests/docs_pages/test_page_training.py",
    "docs/guides/sparse.md": "tests/docs_pages/test_page_sparse.py",
    "docs/getting-started.md": "tests/docs_pages/test_page_getting_started.py",
    "docs/guides/corpus-stores.md": "tests/docs_pages/test_page_corpus_stores.py",
    "sbert.static.distill": "tests/docs_pages/test_doctest_static_distill.py",
    "sbert.static.pipeline": "tests/docs_pages/test_doctest_static_pipeline.py",
}


def modules() -> list[str]:
    """Every module of the package but ``__main__``, by name."""
    return sorted(
        m.name for m in pkgutil.walk_packages(sbert.__path__, "sbert.") if m.name != "sbert.__main__"
    )


def page_name(page: Path) -> str:
    return str(page.relative_to(REPO))


@pytest.fixture()
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/work`` with the sample files, ``tmp/shared/data`` the data folder (``../shared/data``)."""
    data = Path(os.path.abspath(os.environ.get("SBERT_DATA", REPO.parent / "shared" / "data")))
    (tmp_path / "shared").mkdir()
    if data.is_dir():
        (tmp_path / "shared" / "data").symlink_to(data, target_is_directory=True)
        monkeypatch.setenv("SBERT_DATA", str(data))
    work = tmp_path / "work"
    work.mkdir()
    for name, text in SAMPLE_FILES.items():
        (work / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(work)
    return work


def run_docstring_examples(name: str, workdir: Path) -> None:
    """Run the ``>>>`` examples of module ``name`` in ``workdir``; skip a module without any."""
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    if not tests:
        pytest.skip("no examples")
    uses_data = any("../shared/data" in example.source for test in tests for example in test.examples)
    if uses_data and not (workdir.parent / "shared" / "data").is_dir():
        pytest.skip("the examples read the data folder, which is not here (set SBERT_DATA)")
    report = io.StringIO()
    failed = 0
    for test in tests:
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        failed += runner.run(test, out=report.write).failed
    assert not failed, report.getvalue()


def run_page_examples(page: Path, workdir: Path) -> None:
    """The page's Python blocks and its bash blocks marked ``run``, in order, in one namespace (on a
    ``STANDALONE`` page, each Python block in its own, without the sample files)."""
    if page in STANDALONE:
        for name in SAMPLE_FILES:
            (workdir / name).unlink()
    namespace: dict[str, object] = {"__name__": "__docs__"}
    ran, skipped = 0, []
    for block in blocks(page):
        if block.marker == "skip":
            skipped.append(f"{block.where}: {block.reason}")
            continue
        if block.lang == "python":
            if page in STANDALONE:
                namespace = {"__name__": "__docs__"}
            exec(compile(block.code, block.where, "exec"), namespace)
            ran += 1
        elif block.lang == "bash" and block.marker == "run":
            _run_bash(block, workdir)
            ran += 1
    if not ran:
        pytest.skip("; ".join(skipped))


def _run_bash(block: Block, workdir: Path) -> None:
    source = Path(sbert.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
    # `sbert` is this interpreter's module and `python` this interpreter, whatever is on PATH.
    functions = f'sbert() {{ "{sys.executable}" -m sbert "$@"; }}\npython() {{ "{sys.executable}" "$@"; }}'
    script = f"{functions}\nset -euo pipefail\n{block.code}"
    result = subprocess.run(
        ["bash", "-c", script], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, (
        f"{block.where}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    )
