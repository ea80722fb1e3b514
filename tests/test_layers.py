"""The layers of the tree: the command line and the server are shells over the library, never below it."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sbert"


def _imports(path: Path) -> set[str]:
    """Every sbert module ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "sbert" or name.startswith("sbert.")}


def _importers_of(package: str, allowed: tuple[str, ...]) -> list[str]:
    return sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.relative_to(SRC).parts[0] not in allowed
        and path.name != "__main__.py"
        and any(name == package or name.startswith(package + ".") for name in _imports(path))
    )


def test_nothing_below_the_command_line_imports_it() -> None:
    assert _importers_of("sbert.cli", allowed=("cli",)) == []


def test_only_the_command_line_imports_the_server() -> None:
    assert _importers_of("sbert.server", allowed=("cli", "server")) == []
