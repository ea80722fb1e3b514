"""OpenVINO graphs kept on disk, so int8 calibration runs once per machine, not per process, and
a new process does not convert the float graph again.

Calibrating takes about 5 s, converting the float graph about 1 s; reading the stored graph back,
its checksum checked, a fraction of a second. A graph is stored under a fingerprint of everything it was made from (the module's structure
and weights, the calibration token ids, the recipe, and the library versions), so changed weights or
a new calibration set never reuse a stale graph.

Location: ``$SBERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/sbert``, else ``~/.cache/sbert``; the graphs lie
in its ``openvino/`` folder (about 40 MB each for all-MiniLM-L6-v2), the :data:`MAX_GRAPHS` most
recently used. ``SBERT_CACHE_DIR=off`` turns the cache off. Each graph is stored with the SHA-256 of its
files and read only if they still match, so a graph altered on disk is rebuilt, never served.
The folder ``openvino-by-files/`` beside it holds :mod:`sbert.encoder.cold_start`'s entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.base.files import replace_dir, staging_dir

if TYPE_CHECKING:  # torch is imported only to fingerprint a module: reading a graph back needs none
    from torch import nn

logger = logging.getLogger("sbert")

CACHE_ENV = "SBERT_CACHE_DIR"
# Every fine-tuned checkpoint gets its own graph; keeping only the most recently used bounds the
# folder (about 40 MB a graph for all-MiniLM-L6-v2) without a clean-up command.
MAX_GRAPHS = 8
CHECKSUM_FILE = "sha256.json"
_GRAPH_FILES = ("model.xml", "model.bin")
_VERSIONED = ("sbert", "openvino", "nncf", "torch", "transformers")


def cache_dir() -> Path | None:
    """The cache folder, or ``None`` when ``SBERT_CACHE_DIR=off``.

    Examples:
        >>> folder = cache_dir()  # e.g. PosixPath('/home/me/.cache/sbert')
    """
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return None if configured.lower() == "off" else Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sbert"


def fingerprint(module: nn.Module, recipe: dict[str, Any]) -> str:
    """A hex digest of ``module`` (structure and every weight), ``recipe`` and the library versions."""
    from sbert.base.weights import hash_weights

    digest = hashlib.sha256()
    described = {"recipe": recipe, "module": repr(module), "versions": _versions()}
    digest.update(json.dumps(described, sort_keys=True).encode("utf-8"))
    hash_weights(digest, module)
    return digest.hexdigest()


def load_or_build(key: str, build: Callable[[], Any]) -> Any:
    """The OpenVINO model stored under ``key``, else ``build()``'s, stored and read back.

    A stored graph is served only if its files match the checksums written with them; an
    unreadable or altered one is rebuilt and replaced, with a warning. A cache that cannot be
    written (a full disk, no permission) leaves the graph just built in memory, with one warning
    per process: neither stops encoding nor changes what it computes.
    """
    root = cache_dir()
    if root is None:
        return build()
    folder = root / "openvino" / key
    if (folder / "model.xml").is_file():
        try:
            model = _read_verified(folder)
        except Exception as error:  # truncated, overwritten or foreign files: rebuild them
            logger.warning("rebuilding the cached graph %s (%s)", folder, error)
        else:
            with contextlib.suppress(OSError):  # a read-only cache still serves
                os.utime(folder)  # recently used: kept longest
            return model
    model = build()
    try:
        _store(model, folder)
        # The stored graph, not the one in memory: OpenVINO reads back constants it folds differently
        # (vectors 1e-7 apart), and this run should give what every later run gives.
        stored = _read_verified(folder)
    except Exception as error:  # OpenVINO reports a full disk as a RuntimeError, not an OSError
        if str(root) not in _unwritable:
            _unwritable.add(str(root))
            detail = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
            logger.warning(
                "could not cache the OpenVINO graph in %s (%s); it runs from memory and is "
                "made again in each process until the cache can be written",
                folder,
                detail,
            )
        return model
    with contextlib.suppress(OSError):
        _forget_all_but_recent(folder.parent, MAX_GRAPHS)
    return stored


def read_stored(key: str) -> Any | None:
    """The graph stored under ``key``, its checksums verified, or ``None`` when the cache is off or
    holds no intact graph there: for a caller that cannot build one (it then takes the path that can)."""
    root = cache_dir()
    folder = None if root is None else root / "openvino" / key
    if folder is None or not (folder / "model.xml").is_file():
        return None
    try:
        model = _read_verified(folder)
    except Exception as error:  # altered or unreadable: the building path warns and rebuilds it
        logger.debug("not reading the cached graph %s (%s)", folder, error)
        return None
    with contextlib.suppress(OSError):
        os.utime(folder)  # recently used: kept longest
    return model


_unwritable: set[str] = set()  # cache folders already warned about in this process


def _store(model: Any, folder: Path) -> None:
    """Save into a staging folder with a checksum file, then swap it in: readers never see half a graph."""
    import openvino as ov

    staging = staging_dir(folder)
    try:
        ov.save_model(model, staging / "model.xml", compress_to_fp16=False)
        sums = {name: hashlib.sha256((staging / name).read_bytes()).hexdigest() for name in _GRAPH_FILES}
        (staging / CHECKSUM_FILE).write_text(json.dumps(sums, indent=1) + "\n", encoding="utf-8")
        replace_dir(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _read_verified(folder: Path) -> Any:
    """Read the graph in ``folder`` from the very bytes checked against its SHA-256 sums.

    Raises:
        ValueError: a file does not match its checksum, or the checksum file is missing.
    """
    import openvino as ov

    try:
        sums = json.loads((folder / CHECKSUM_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"no readable {CHECKSUM_FILE}") from error
    data = {name: (folder / name).read_bytes() for name in _GRAPH_FILES}
    for name, content in data.items():
        if not isinstance(sums, dict) or hashlib.sha256(content).hexdigest() != sums.get(name):
            raise ValueError(f"{name} does not match its SHA-256 checksum: overwritten or corrupt")
    return ov.Core().read_model(data["model.xml"], data["model.bin"])


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
