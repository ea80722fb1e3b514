"""The layers of the tree: the command line and the server are shells over the library, never below it."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sbert"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in SRC.rglob("*.py")}


def _imports(path: Path) -> set[str]:
    """Every sbert module ``path`` imports, at the top, under TYPE_CHECKING or inside a function;
    ``from sbert.x import y`` imports ``sbert.x.y`` where ``y`` is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & MODULES.keys()
            found.update(submodules or {node.module})  # not the package a submodule is taken from
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
    ("sbert._version",),
    ("sbert.base", "sbert.resources"),  # errors, contracts, options, atomic files, output claims, batching
    ("sbert.embeddings",),  # what is done with vectors: similarity, quantization, truncation, identity, search
    ("sbert.data",),
    ("sbert.modules",),  # text → tokens → token vectors → pooling → sentence vector, one module a step
    ("sbert.inference",),  # the engines that run the modules
    ("sbert.model",),  # the base every kind shares: device, folders and their kinds, hub, prompts, routes
    ("sbert.encoder", "sbert.sparse", "sbert.cross_encoder"),  # the kinds, siblings: dense, SPLADE, pairs
    ("sbert.static",),  # the static tier
    ("sbert.losses",),
    ("sbert.store", "sbert.index"),
    ("sbert.evaluation",),
    ("sbert.training",),
    ("sbert.applications",),
    ("sbert", "sbert.util", "sbert.quantization"),  # the public face
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
    for module, path in sorted(MODULES.items()):
        upward += [
            f"{module} (floor {_floor(module)}) imports {name} (floor {_floor(name)})"
            for name in sorted(_imports(path))
            if _floor(name) > _floor(module)
        ]
    assert upward == []


KINDS = ("sbert.encoder", "sbert.sparse", "sbert.cross_encoder")  # the model kinds, siblings on one floor


def test_no_model_kind_imports_another() -> None:
    """The dense, sparse and cross-encoder folders share only what is below them (sbert.model)."""
    crossing = [
        f"{module} imports {name}"
        for module, path in sorted(MODULES.items())
        for kind in KINDS
        if module == kind or module.startswith(kind + ".")
        for name in sorted(_imports(path))
        for other in KINDS
        if other != kind and (name == other or name.startswith(other + "."))
    ]
    assert crossing == []


def test_the_floors_name_real_modules() -> None:
    for prefixes in FLOORS:
        for prefix in prefixes:
            relative = Path(*prefix.split("."))
            assert (SRC.parent / relative).is_dir() or (SRC.parent / relative).with_suffix(".py").is_file(), (
                prefix
            )


def test_no_module_imports_itself_back() -> None:
    """No circle of imports, through any number of modules (Tarjan's strongly connected components)."""
    edges = {
        module: {name for name in _imports(path) if name in MODULES and name != module}
        for module, path in MODULES.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for name in edges[module]:
            if name not in index:
                visit(name)
                low[module] = min(low[module], low[name])
            elif name in stack:
                low[module] = min(low[module], index[name])
        if low[module] == index[module]:
            component = []
            while (name := stack.pop()) != module:
                component.append(name)
            if component:
                circles.append(sorted([module, *component]))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert circles == []


def test_the_root_holds_the_public_face_only() -> None:
    assert sorted(path.name for path in SRC.glob("*.py")) == [
        "__init__.py",
        "__main__.py",
        "_version.py",
        "quantization.py",
        "util.py",
    ]


def test_every_folder_says_in_one_line_what_lives_there() -> None:
    for init in sorted(SRC.rglob("__init__.py")):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert docstring, f"{init.relative_to(SRC)} has no docstring"
        assert docstring.splitlines()[0].strip(), f"{init.relative_to(SRC)}: its first line is empty"
