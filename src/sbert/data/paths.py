"""The data directory: from a flag, else ``$SBERT_DATA``, else the user data folder.

The user data folder is where ``sbert data download`` puts the public releases:
``$XDG_DATA_HOME/sbert/data``, else ``~/.local/share/sbert/data``. It is used when it exists, so
that examples work without flags once the data is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "SBERT_DATA"
DOWNLOAD_HINT = (
    "run `sbert data download` (public releases, into {default}), or pass --data-dir or set SBERT_DATA"
)


class MissingDataError(FileNotFoundError):
    """A data set's file is not in the data directory (or no data directory is set)."""


def default_data_dir() -> Path:
    """The user data folder: ``$XDG_DATA_HOME/sbert/data``, else ``~/.local/share/sbert/data``.

    Examples:
        >>> default_data_dir().parts[-2:]
        ('sbert', 'data')
    """
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base).expanduser() / "sbert" / "data"


def resolve_data_dir(data_dir: str | Path | None = None) -> Path | None:
    """``data_dir``, else ``$SBERT_DATA``, else the user data folder if it exists; else ``None``.

    A relative path (``SBERT_DATA=../shared/data``, as the README writes it) is made absolute against
    the working directory now, so that links, subprocesses and reports all name the same folder.
    """
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_ENV)
    if chosen:
        return Path(os.path.abspath(Path(chosen).expanduser()))
    default = default_data_dir()
    return default if default.is_dir() else None


def missing_data_message(what: str) -> str:
    """``what`` followed by how to get the data: the command to run and the flags."""
    return f"{what}; {DOWNLOAD_HINT.format(default=default_data_dir())}"


def dataset_file(data_dir: str | Path | None, relative: str, dataset: str) -> Path:
    """A file inside the data directory; :class:`MissingDataError` names the path and the data set."""
    root = resolve_data_dir(data_dir)
    if root is None:
        raise MissingDataError(missing_data_message(f"{dataset}: no data directory"))
    path = root / relative
    if not path.is_file():
        raise MissingDataError(
            f"{dataset}: {path} not found (data directory {root}); fill it with `sbert data download {root}`"
        )
    return path
