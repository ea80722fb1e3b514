"""A fresh install gets the tested set: the README's commands, .ci/run and constraints.txt agree."""

from __future__ import annotations

import re
import subprocess
import sys
import time
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
        assert steps[:3] == ["python3 scripts/check-python", "python3 -m venv .venv", ". .venv/bin/activate"]
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


# A stand-in for python3: runs scripts/check-python as a Python of version $FAKE_VERSION would (the real
# interpreter underneath), and records any other use (`-m venv`, a pip) instead of doing it.
FAKE_PYTHON3 = """#!{python}
import os, runpy, sys
if sys.argv[1:] == ["scripts/check-python"]:
    if os.environ.get("FAKE_VERSION"):
        sys.version_info = tuple(int(p) for p in os.environ["FAKE_VERSION"].split(".")) + ("final", 0)
    sys.argv = sys.argv[1:]
    runpy.run_path("scripts/check-python", run_name="__main__")
else:
    with open("reached", "a") as log:
        log.write(" ".join(sys.argv[1:]) + "\\n")
    sys.exit(3)
"""


def _run_start_here(tmp_path: Path, fake_version: str | None = None) -> list[tuple[int, str, float]]:
    """Each README command run by bash in ``tmp_path`` (a checkout's scripts/ copied there), with the
    fake python3 first on PATH: (exit status, stderr, seconds) per command."""
    (tmp_path / "scripts").mkdir(exist_ok=True)
    (tmp_path / "scripts" / "check-python").write_text((REPO / "scripts" / "check-python").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").write_text(FAKE_PYTHON3.format(python=sys.executable))
    (bin_dir / "python3").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    if fake_version:
        env["FAKE_VERSION"] = fake_version
    results = []
    for command in _start_here_commands():
        start = time.perf_counter()
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        results.append((done.returncode, done.stderr, time.perf_counter() - start))
    return results


def test_a_python3_below_the_floor_stops_both_commands_in_seconds_naming_the_fix(tmp_path: Path) -> None:
    """A Debian python3 3.11.2 went on to fetch 1.3 GB of wheels, then failed on a resolver conflict
    that named mkdocs-material, not Python (issue 54)."""
    for code, stderr, seconds in _run_start_here(tmp_path, fake_version="3.11.2"):
        assert code == 1, stderr
        assert stderr.count("\n") == 1, stderr  # one line
        assert "python3 is 3.11.2" in stderr and "below the tested floor 3.11.5" in stderr, stderr
        assert "install Python 3.11.5 or newer" in stderr, stderr
        assert seconds < 10
    assert not (tmp_path / "reached").exists()  # no venv made, nothing installed
    assert not (tmp_path / ".venv").exists()


@pytest.mark.parametrize("line", ["version = 3.11.2", "version_info = 3.10.14.final.0"])
def test_a_venv_made_by_another_python_stops_both_commands_naming_the_fix(tmp_path: Path, line: str) -> None:
    """`python3 -m venv .venv` keeps an old .venv's interpreter: a newer python3 then ran the install
    with the old Python in silence (issue 54)."""
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text(
        f"home = /usr/bin\ninclude-system-site-packages = false\n{line}\n"
    )
    made_by = ".".join(line.split(" = ")[1].split(".")[:3])
    here = ".".join(str(part) for part in sys.version_info[:3])
    for code, stderr, seconds in _run_start_here(tmp_path):
        assert code == 1, stderr
        assert f".venv was made by Python {made_by} and python3 is {here}" in stderr, stderr
        assert "rm -rf .venv" in stderr and seconds < 10
    assert not (tmp_path / "reached").exists()
    assert (tmp_path / ".venv" / "pyvenv.cfg").is_file()  # the user's folder is left as it was


def test_a_venv_made_by_this_python_or_none_lets_both_commands_go_on(tmp_path: Path) -> None:
    for code, stderr, _ in _run_start_here(tmp_path):  # no .venv yet: the next step, `python3 -m venv`
        assert (code, stderr) == (3, "")
    (tmp_path / ".venv").mkdir()
    version = ".".join(str(part) for part in sys.version_info[:3])
    (tmp_path / ".venv" / "pyvenv.cfg").write_text(f"home = /usr/bin\nversion = {version}\n")
    for code, stderr, _ in _run_start_here(tmp_path):
        assert (code, stderr) == (3, "")
    assert (tmp_path / "reached").read_text().splitlines() == ["-m venv .venv"] * 4


def test_the_check_script_and_the_readme_state_one_floor() -> None:
    script = (REPO / "scripts" / "check-python").read_text(encoding="utf-8")
    floor = re.search(r"^FLOOR = \((\d+), (\d+), (\d+)\)$", script, re.MULTILINE)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert floor is not None and f"`python3` {'.'.join(floor.groups())} or newer" in readme


def test_getting_started_shows_the_readme_commands_and_what_ci_sets() -> None:
    """The install page repeats the README's two commands verbatim, and says what `.ci/run` adds."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    page = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    block = readme.split("## Start here", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    assert block in page.split("## Install", 1)[1].split("\n## ", 1)[0]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    names = re.findall(r"(?:^export |\s)([A-Z][A-Z_]+)=", ci, re.MULTILINE)  # the variables it sets
    assert names and all(f"`{name}" in page for name in names), names


# The pages a new user installs from; their pip lines install the checkout's tested set.
INSTALL_PAGES = [
    "README.md",
    "docs/getting-started.md",
    "docs/guides/sparse.md",
    "docs/guides/coming-from-st.md",
    "docs/guides/encode.md",
    "docs/guides/data.md",
    "docs/guides/reproduce.md",
    "docs/guides/evaluation.md",
    "docs/guides/corpus-stores.md",
]
# Every page a user reads (a guide left out of INSTALL_PAGES still must not install untested versions).
USER_PAGES = sorted(
    {*INSTALL_PAGES, *(str(path.relative_to(REPO)) for path in (REPO / "docs" / "guides").glob("*.md"))}
)


def test_every_pip_install_in_the_user_pages_takes_the_tested_set() -> None:
    """`pip install 'sbert[sparse]'` asked the package index for a package, not the checkout's extra, and
    a line without `-c constraints.txt` installs versions the tests never saw (issue 54)."""
    wrong = []
    for name in USER_PAGES:
        for number, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), 1):
            for command in re.findall(r"pip install[^`;&|]*", line):
                if "-c constraints.txt" not in command or "sbert[" in command:
                    wrong.append(f"{name}:{number}: {command}")
    assert wrong == []


def test_the_user_pages_hold_no_internal_details() -> None:
    """No lock file of the project's machines, no branch name, no install row for its machines."""
    for name in INSTALL_PAGES:
        text = (REPO / name).read_text(encoding="utf-8")
        for internal in ("sbert-heavy.lock", "branch sp-", "this project's machines", "erratum"):
            assert internal not in text, f"{name}: {internal}"
