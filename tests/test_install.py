"""A fresh install gets the tested set: the README's commands, .ci/run and constraints.txt agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")


def _start_here_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Start here", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("pip install")]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_ci_runs_the_readme_test_command_in_a_fresh_venv() -> None:
    install, test = _start_here_commands()
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci and "python3 -m venv .ci-venv" in ci
    assert ".ci-venv/" in (REPO / ".gitignore").read_text(encoding="utf-8")
    for command in (install, test):
        installs = command.split("&&")[:-1]
        assert all("-c constraints.txt" in part for part in installs), command
        assert "torch==2.13.0" in installs[0]


def test_the_install_page_gives_the_cpu_and_the_cuda_torch_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/getting-started.md#install" in readme  # the README's Start here links to it
    page = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    install = page.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert (
        "pip install -c constraints.txt torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
        in install
    )
    assert "CUDA build" in install


def test_every_tested_dependency_is_pinned_and_torch_has_no_local_suffix() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    requirements, pending = list(project["dependencies"]), ["test"]  # what the README's test command installs
    while pending:
        for requirement in extras[pending.pop()]:
            if requirement.startswith("sbert["):
                pending += requirement[6:-1].split(",")
            else:
                requirements.append(requirement)
    pins = _pins()
    names = {re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]).lower() for r in requirements}
    assert sorted(names - set(pins)) == []
    assert pins["torch"] == "2.13.0"
    assert "sbert" not in pins
