"""Documentation statements that once disagreed with the code (issue 16), checked against the code.

The README is a front door (issue 28); the statements live in the pages of ``docs/`` it links to.
"""

import re
from pathlib import Path

import sbert.cli.demo

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = {
    path: path.read_text(encoding="utf-8")
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
}
PYTHON_BLOCKS = [
    block for text in PAGES.values() for block in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
]


def page(relative: str) -> str:
    return PAGES[REPO / relative]


def test_python_examples_define_what_they_use() -> None:
    for block in PYTHON_BLOCKS:
        if "my_sentences" in block:
            assert re.search(r"^my_sentences = ", block, flags=re.MULTILINE), block


def test_the_evaluation_example_measures_in_float32() -> None:
    [block] = [b for b in PYTHON_BLOCKS if "evaluate_sts(" in b]
    assert 'from_pretrained(precision="float32")' in block and "# 82.03" in block


def test_the_demo_linkage_is_the_one_the_readme_names() -> None:
    source = Path(sbert.cli.demo.__file__).read_text(encoding="utf-8")
    assert 'linkage_method="complete"' in source and "(complete linkage)" in source
    for text in (README, page("docs/getting-started.md")):
        demo_paragraph = text[text.index("`sbert demo` embeds") :][:600]
        assert "complete linkage" in demo_paragraph


def test_the_unpickling_statement_is_exact() -> None:
    loading = page("docs/guides/encode.md")
    assert all("nothing is unpickled" not in text for text in PAGES.values())
    assert "torch.load(weights_only=True)" in loading[: loading.index("## `encode()`")]


def test_the_documented_from_pretrained_signature_is_the_code_s() -> None:
    import inspect

    from sbert import SentenceEncoder

    parameters = list(inspect.signature(SentenceEncoder.from_pretrained).parameters)
    documented = re.search(
        r"`SentenceEncoder\.from_pretrained\((.*?)\)` takes", page("docs/guides/encode.md")
    )
    assert documented is not None
    assert [part.split("=")[0].strip() for part in documented.group(1).split(",")] == parameters


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 250
    for target in re.findall(r"\]\(((?:docs|reports)/[^)#]+)", README):
        assert (REPO / target).is_file(), target


def test_the_command_list_is_the_parsers() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    assert hooks.command_table() in page("docs/reference/cli.md"), "run: python docs/hooks.py"
