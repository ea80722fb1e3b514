"""What every module of a model is on disk: its sentence-transformers type, its folder, its format.

A module class says which sentence-transformers type it is (``st_type``), which config file it
keeps in its folder and with which keys (``config_file_name``, ``config_keys``), and reads and
writes that folder itself (``load``, ``save``), as sentence-transformers' modules do. Defining such
a class registers it: the model's reader and writer (:mod:`sbert.encoder.format`) only walk
``modules.json`` and call these methods, so a new module type is one new class.

sentence-transformers' own types are known by their last name (``Dense`` for
``sentence_transformers.models.Dense``): it writes one class under several paths across versions;
any other type by its whole path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar

from torch import nn

from sbert.base import json_text
from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json

_REGISTRY: dict[str, type[Module]] = {}


class Module(nn.Module):
    """A module that owns its on-disk format; subclasses register themselves by ``st_type``.

    The default :meth:`load` and :meth:`save` keep the ``config_keys`` attributes in
    ``config_file_name`` and build the module from them; a module with weights or other files
    overrides them.

    Examples:
        >>> import torch, tempfile
        >>> class Scale(Module):
        ...     st_type = "my_package.Scale"
        ...     config_keys = ("factor",)
        ...     def __init__(self, factor: float = 2.0) -> None:
        ...         super().__init__()
        ...         self.factor = factor
        ...     def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        ...         return embeddings * self.factor
        >>> folder = Path(tempfile.mkdtemp())
        >>> Scale(3.0).save(folder)
        >>> module_class("my_package.Scale").load(folder).factor
        3.0
    """

    st_type: ClassVar[str] = ""  # sentence-transformers' class path, as modules.json names it
    # The type modules.json names when sbert writes the module, where it is not the registered one
    # (a module read under an older name and written under sentence-transformers' current one).
    written_type: ClassVar[str] = ""
    config_file_name: ClassVar[str] = "config.json"
    config_keys: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A class that names its own type registers it; a subclass that inherits one does not.
        if cls.__dict__.get("st_type"):
            _REGISTRY[_key(cls.st_type)] = cls

    def config(self) -> dict[str, Any]:
        """What :meth:`save` writes to ``config_file_name``: the ``config_keys`` attributes."""
        return {key: getattr(self, key) for key in self.config_keys}

    @classmethod
    def load(cls, folder: Path, **options: Any) -> Module:
        """Read the module from its folder; ``options`` are the reader's overrides (``max_seq_length``),
        which a module that has no such setting ignores."""
        config = read_json(folder / cls.config_file_name) if cls.config_keys else {}
        return cls(**{key: config[key] for key in cls.config_keys if key in config})

    def save(self, folder: Path) -> None:
        """Write the module into ``folder`` (which exists)."""
        if self.config_keys:
            write_json(folder / self.config_file_name, self.config())


def _key(st_type: str) -> str:
    """The registry key of a type path: a sentence-transformers type's last name, else the path."""
    return st_type.rsplit(".", 1)[-1] if st_type.startswith("sentence_transformers.") else st_type


def module_class(st_type: str) -> type[Module] | None:
    """The registered class of a ``modules.json`` type, or ``None``: the whole path, else its last
    name (sentence-transformers' types under any of their paths)."""
    return _REGISTRY.get(st_type) or _REGISTRY.get(st_type.rsplit(".", 1)[-1])


def supported() -> tuple[str, ...]:
    """The module types sbert reads, by their short names."""
    return tuple(_REGISTRY)


def load_module(st_type: object, folder: Path, listing: Path, **options: Any) -> Module:
    """The module of type ``st_type`` read from ``folder``.

    Raises:
        ModelLoadError: the type is not registered (the message names ``listing``, the file that
            names the type), or the module's files cannot be read.
    """
    cls = module_class(str(st_type or ""))
    if cls is None:
        raise ModelLoadError(
            f"{listing}: module type {st_type!r} is not supported (sbert reads {', '.join(supported())})"
        )
    return cls.load(folder, **options)


def save_module(module: nn.Module, folder: Path) -> str:
    """Write ``module`` into ``folder`` (made if missing); its sentence-transformers type.

    Raises:
        TypeError: the module is not a registered :class:`Module` (sbert could not read it back).
    """
    if not isinstance(module, Module) or not module.st_type:
        raise TypeError(
            f"cannot save layer {type(module).__name__}: sbert saves the module types it reads "
            f"({', '.join(supported())})"
        )
    folder.mkdir(parents=True, exist_ok=True)
    module.save(folder)
    return module.written_type or module.st_type


def read_modules_json(modules_file: Path) -> list[dict[str, Any]]:
    """The entries of ``modules.json`` in ``idx`` order, each with a ``path`` inside the model directory."""
    entries = read_json(modules_file)
    if not isinstance(entries, list):
        raise ModelLoadError(
            f"{modules_file}: expected a list of modules (objects with idx, path and type), "
            f"got a JSON {type(entries).__name__}"
        )
    checked = []
    for position, entry in enumerate(entries):
        where = f"{modules_file}: entry {position}"
        if not isinstance(entry, dict):
            raise ModelLoadError(f"{where} is a JSON {type(entry).__name__}, expected an object")
        idx = entry.get("idx", position)
        if not re.fullmatch(r"[0-9]+", str(idx)):  # an int or a string of digits; not True, 1.5 or "a"
            raise ModelLoadError(f"{where}: idx {idx!r} is not a whole number")
        folder = entry.get("path", "")
        if not isinstance(folder, str):
            raise ModelLoadError(f"{where}: path {folder!r} is not a string")
        normal = os.path.normpath(folder.replace("\\", "/")) if folder else ""
        if os.path.isabs(normal) or normal == ".." or normal.startswith("../"):
            raise ModelLoadError(f"{where}: path {folder!r} leads outside the model directory")
        checked.append({**entry, "idx": int(idx), "path": folder})
    return sorted(checked, key=lambda e: e["idx"])


def write_json(path: Path, data: object) -> None:
    """Write ``data`` as indented JSON, as sentence-transformers writes its config files."""
    path.write_text(json_text.dumps(data, indent=2) + "\n", encoding="utf-8")
