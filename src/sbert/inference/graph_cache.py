"""Calibrated OpenVINO graphs kept on disk, so int8 calibration runs once per machine, not per process.

Calibrating takes about 5 s; reading the stored graph back takes about 0.05 s. A graph is stored
under a fingerprint of everything it was made from (the module's structure and weights, the
calibration token ids, the recipe, and the library versions), so changed weights or a new
calibration set never reuse a stale graph.

Location: ``$SBERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/sbert``, else ``~/.cache/sbert``; the graphs lie
in its ``openvino/`` folder (about 40 MB each for all-MiniLM-L6-v2), the :data:`MAX_GRAPHS` most
recently used. ``SBERT_CACHE_DIR=off`` turns the cache off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import torch
from torch import nn

logger = logging.getLogger("sbert")

CACHE_ENV = "SBERT_CACHE_DIR"
# Every fine-tuned checkpoint gets its own graph; keeping only the most recently used bounds the
# folder (about 40 MB a graph for all-MiniLM-L6-v2) without a clean-up command.
MAX_GRAPHS = 8
_VERSIONED = ("sbert", "openvino", "nncf", "torch", "transformers")


def cache_dir() -> Path | None:
    """The cache folder, or ``None`` when ``SBERT_CACHE_DIR=off``.

    Example:
        >>> folder = cache_dir()  # e.g. PosixPath('/home/me/.cache/sbert')
    """
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return None if configured.lower() == "off" else Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sbert"


def fingerprint(module: nn.Module, recipe: dict[str, Any]) -> str:
    """A hex digest of ``module`` (structure and every weight), ``recipe`` and the library versions."""
    digest = hashlib.sha256()
    described = {"recipe": recipe, "module": repr(module), "versions": _versions()}
    digest.update(json.dumps(described, sort_keys=True).encode("utf-8"))
    for name, tensor in module.state_dict().items():
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}:{flat.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def load_or_build(key: str, build: Callable[[], Any]) -> Any:
    """The OpenVINO model stored under ``key``, else ``build()``'s, stored and read back.

    An unreadable stored graph is rebuilt and replaced; a cache that cannot be written is skipped with
    a warning: neither stops encoding.
    """
    import openvino as ov

    root = cache_dir()
    if root is None:
        return build()
    folder = root / "openvino" / key
    if (folder / "model.xml").is_file():
        try:
            model = ov.Core().read_model(folder / "model.xml")
        except Exception as error:  # a truncated or foreign file: rebuild it
            logger.warning("rebuilding the unreadable cached graph %s (%s)", folder, error)
        else:
            with contextlib.suppress(OSError):  # a read-only cache still serves
                os.utime(folder)  # recently used: kept longest
            return model
    model = build()
    try:
        _store(model, folder)
        _forget_all_but_recent(folder.parent, MAX_GRAPHS)
    except OSError as error:
        logger.warning("could not cache the calibrated graph in %s (%s)", folder, error)
        return model
    # The stored graph, not the one in memory: OpenVINO reads back constants it folds differently
    # (vectors 1e-7 apart), and this run should give what every later run gives.
    return ov.Core().read_model(folder / "model.xml")


def _store(model: Any, folder: Path) -> None:
    """Write to a temporary folder beside ``folder``, then rename: readers never see half a graph."""
    import openvino as ov

    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
    try:
        ov.save_model(model, staging / "model.xml", compress_to_fp16=False)
        shutil.rmtree(folder, ignore_errors=True)  # an unreadable copy
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _forget_all_but_recent(root: Path, keep: int) -> None:
    graphs = sorted(
        (p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")), key=os.path.getmtime
    )
    for old in graphs[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def _versions() -> dict[str, str]:
    versions = {}
    for package in _VERSIONED:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "missing"
    return versions
