"""The data directory: from a flag, else the ``SBERT_DATA`` environment variable."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "SBERT_DATA"


class MissingDataError(FileNotFoundError):
    """A data set's file is not in the data directory (or no data directory is set)."""


def resolve_data_dir(data_dir: str | Path | None = None) -> Path | None:
    """The data directory named by ``data_dir`` or ``$SBERT_DATA``; ``None`` when neither is set."""
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_ENV)
    return Path(chosen).expanduser() if chosen else None


def dataset_file(data_dir: str | Path | None, relative: str, dataset: str) -> Path:
    """A file inside the data directory; :class:`MissingDataError` names the path and the data set."""
    root = resolve_data_dir(data_dir)
    if root is None:
        raise MissingDataError(
            f"{dataset}: no data directory; pass --data-dir or set {DATA_ENV} (e.g. {DATA_ENV}=../shared/data)"
        )
    path = root / relative
    if not path.is_file():
        raise MissingDataError(f"{dataset}: {path} not found (data directory {root})")
    return path
