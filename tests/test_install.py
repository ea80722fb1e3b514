"""A fresh install gets the tested set: the README's commands, .ci/run and constraints.txt agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")


def _start_here_commands() -> list[str]:
    """The README's two commands, as written (a command goes on over a line ending in a backslash)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Start here", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    commands, current = [], ""
    for line in block.strip().split("\n"):
        if line and not line.startswith("#"):
            current += line + "\n"
            if not line.endswith("\\"):
                commands.append(current.rstrip("\n"))
                current = ""
    return commands


def _steps(command: str) -> list[str]:
    """The steps of a command chained with ``&&``, each on one line."""
    return [" ".join(step.split()) for step in re.sub(r"\\\n", " ", command).split("&&")]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_ci_runs_the_readme_test_command_as_written() -> None:
    install, test = _start_here_commands()
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci
    assert ".venv/" in (REPO / ".gitignore").read_text(encoding="utf-8")
    for command in (install, test):
        installs = [step for step in _steps(command) if step.startswith("pip install")]
        assert all("-c constraints.txt" in step for step in installs), command
        assert "torch==2.13.0" in installs[0]


def test_each_readme_command_makes_and_activates_the_venv_before_installing() -> None:
    """Typed alone in a new shell, neither command installs into the system's Python (issue 45)."""
    for command in _start_here_commands():
        steps = _steps(command)
        assert steps[:2] == ["python3 -m venv .venv", ". .venv/bin/activate"], command
        assert not any(";" in step or "||" in step for step in steps), command  # a failure stops it


def test_the_readme_python_floor_admits_every_installed_pin() -> None:
    """A pin whose Requires-Python the README's floor misses sends pip backtracking for half an hour
    (pymdown-extensions 13.1.2 needs 3.11.5; a Debian python3 3.11.2 never resolved, issue 45)."""
    from importlib import metadata

    from packaging.specifiers import SpecifierSet

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"On a fresh machine \(`python3` (\d+\.\d+\.\d+) or newer", readme)
    assert found is not None
    checked = 0
    for name, version in _pins().items():
        try:
            installed = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an extra this environment lacks
        requires = installed.metadata.get("Requires-Python")
        if installed.version.split("+")[0] == version and requires:
            assert found.group(1) in SpecifierSet(requires), f"{name}=={version} needs Python {requires}"
            checked += 1
    assert checked >= 50


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
