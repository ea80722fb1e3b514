"""A model folder, read and written the one way every kind shares: sentence-transformers' layout.

A folder lists its modules in ``modules.json`` (type and folder of each, in order) and keeps the
model's settings in ``config_sentence_transformers.json`` (prompts, similarity function, a sparse
model's ``model_type`` and ``max_active_dims``). Each module reads and writes its own folder
(:mod:`sbert.modules.module`); :func:`read_modules` is the one walk of ``modules.json`` and
:func:`write_model` the one writer. What a kind composes from the modules is its own
(:mod:`sbert.encoder.format`, :mod:`sbert.sparse.format`).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sbert.modules import Normalize
    >>> folder = Path(tempfile.mkdtemp()) / "model"
    >>> write_model(folder, [Normalize()])
    >>> [type(module).__name__ for module, _ in read_modules(folder)]
    ['Normalize']
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from torch import nn

from sbert._version import __version__
from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json, replace_dir, staging_dir
from sbert.model.prompts import Prompts
from sbert.modules import Router
from sbert.modules.module import load_module, module_class, read_modules_json, save_module, write_json

SETTINGS_FILE = "config_sentence_transformers.json"


def read_modules(path: Path, max_seq_length: int | None = None) -> list[tuple[nn.Module, Path]] | None:
    """Each module ``path/modules.json`` lists, loaded from its folder, in order (``None``: the
    folder has no ``modules.json``, a plain Hugging Face folder).

    Raises:
        ModelLoadError: naming ``modules.json``: a Router that is not the first module, a module
            type sbert does not read, a module's file missing or unreadable.
    """
    modules_file = path / "modules.json"
    if not modules_file.is_file():
        return None
    loaded: list[tuple[nn.Module, Path]] = []
    for position, entry in enumerate(read_modules_json(modules_file)):
        folder = path / entry["path"]
        if position > 0 and module_class(str(entry.get("type", ""))) is Router:
            raise ModelLoadError(
                f"{modules_file}: module type {entry.get('type')!r} is not supported (a Router must be "
                "the first module)"
            )
        loaded.append(
            (load_module(entry.get("type"), folder, modules_file, max_seq_length=max_seq_length), folder)
        )
    return loaded


def read_settings(path: Path) -> dict[str, Any]:
    """``config_sentence_transformers.json`` of ``path`` (``{}`` where there is none)."""
    settings = read_json(path / SETTINGS_FILE) if (path / SETTINGS_FILE).is_file() else {}
    return settings if isinstance(settings, dict) else {}


def load_prompts(path: Path) -> Prompts:
    """The prompts of a sentence-transformers directory (none for a plain Hugging Face one)."""
    config_file = path / SETTINGS_FILE
    if not config_file.is_file():
        return Prompts()
    try:
        return Prompts.from_config(read_json(config_file), str(config_file))
    except ValueError as error:
        raise ModelLoadError(str(error)) from error


def saved_similarity_fn_name(path: Path) -> str | None:
    """The ``similarity_fn_name`` a saved model's ``config_sentence_transformers.json`` names, if any."""
    name = read_settings(path).get("similarity_fn_name")
    return name if isinstance(name, str) else None


def write_model(
    path: Path,
    modules: Sequence[nn.Module],
    prompts: Prompts | None = None,
    settings: Mapping[str, Any] | None = None,
) -> None:
    """Write a model directory atomically (built under a temporary name, then swapped into place):
    the settings, then each module in its folder (the first at the root, then ``1_Pooling``...) and
    ``modules.json`` listing them. ``settings`` go into ``config_sentence_transformers.json`` over
    the dense defaults (a sparse encoder's ``model_type``, ``similarity_fn_name``...).

    Raises:
        TypeError: a module sbert could not read back (not a registered module type).
    """
    staging = staging_dir(path)
    try:
        saved = {"__version__": {"sbert": __version__}, **(prompts or Prompts()).config()}
        written = {**saved, "similarity_fn_name": "cosine", **(settings or {})}
        write_json(staging / SETTINGS_FILE, written)
        entries = []
        for idx, module in enumerate(modules):
            sub = "" if idx == 0 else f"{idx}_{type(module).__name__}"  # the first module at the root
            entries.append(
                {"idx": idx, "name": str(idx), "path": sub, "type": save_module(module, staging / sub)}
            )
        write_json(staging / "modules.json", entries)
        replace_dir(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
