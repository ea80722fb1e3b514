"""Atomic file writes: a temporary name in the same folder, renamed into place once complete."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on error it is removed.

    A reader never sees a half-written file, and a failed write leaves the previous file intact.

    Example:
        >>> import numpy as np, tempfile, os
        >>> target = os.path.join(tempfile.mkdtemp(), "vectors.npy")
        >>> with atomic_path(target) as tmp:
        ...     np.save(tmp, np.zeros(3))
        >>> np.load(target).shape
        (3,)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a text file atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
