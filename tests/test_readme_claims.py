"""README statements that once disagreed with the code (issue 16), checked against the code."""

import re
from pathlib import Path

import sbert.cli.demo

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


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
    demo_paragraph = README[README.index("`sbert demo` embeds") :][:600]
    assert "complete linkage" in demo_paragraph


def test_the_unpickling_statement_is_exact() -> None:
    assert "nothing is unpickled" not in README
    assert "torch.load(weights_only=True)" in README[: README.index("## Command line")]
