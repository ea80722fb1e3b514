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


# The floors of docs/development.md, from the ground up: a module imports from its own floor or below.
FLOORS: tuple[tuple[str, ...], ...] = (
    # ground floor: contracts and helpers ("sbert" itself: its names load lazily)
    ("sbert", "sbert.base.contracts", "sbert.base.options", "sbert.base.errors", "sbert.base.files", "sbert.base.outputs", "sbert.base.distributed",
     "sbert.base.inputs", "sbert.base.weights", "sbert.encoder.prompts", "sbert.base.batching", "sbert.embeddings.similarity", "sbert.quantization",
     "sbert.embeddings.truncation", "sbert.encoder.hub", "sbert.resources"),
    ("sbert.data",),
    ("sbert.modules", "sbert.modules.checks", "sbert.encoder.model_io", "sbert.encoder.loading", "sbert.inference", "sbert.encoder.model", "sbert.encoder.router", "sbert.embeddings.identity", "sbert.static",
     "sbert.cross_encoder", "sbert.encoder.output", "sbert.encoder.st_surface"),
    ("sbert.losses",),
    ("sbert.embeddings.search", "sbert.store", "sbert.index"),
    ("sbert.evaluation",),
    ("sbert.training",),
    ("sbert.applications", "sbert.util"),
    ("sbert.server",),
    ("sbert.cli", "sbert.__main__"),
)  # fmt: skip


def _floor(module: str) -> int:
    """The floor of ``module``: that of the longest prefix listed ("sbert" is the package alone)."""
    floors = [
        (len(prefix), floor)
        for floor, prefixes in enumerate(FLOORS)
        for prefix in prefixes
        if module == prefix or (prefix != "sbert" and module.startswith(prefix + "."))
    ]
    if not floors:
        raise AssertionError(f"{module} is on no floor: add it to FLOORS and to docs/development.md")
    return max(floors)[1]


def test_every_import_goes_down_the_floors() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        upward += [
            f"{module} (floor {_floor(module)}) imports {name} (floor {_floor(name)})"
            for name in sorted(_imports(path))
            if _floor(name) > _floor(module) and module != "sbert"
        ]
    assert upward == []


def test_the_floors_name_real_modules() -> None:
    for prefixes in FLOORS:
        for prefix in prefixes:
            relative = Path(*prefix.split("."))
            assert (SRC.parent / relative).is_dir() or (SRC.parent / relative).with_suffix(".py").is_file(), (
                prefix
            )
