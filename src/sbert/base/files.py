"""Atomic writes: at every instant a path holds a complete old or a complete new copy.

A file is written under a temporary name in the same folder and renamed over the old one. A
directory is built beside its target (:func:`staging_dir`) and swapped with it in one step
(:func:`replace_dir`; Linux ``renameat2(RENAME_EXCHANGE)``), so a crash at any moment leaves the old
or the new directory at the path, never neither.

A symbolic link is followed: its target is replaced and the link stays.

Temporary names carry the writer's process id, ``.{name}.{pid}.{8 random}.tmp``: the next write of
the same target removes what a killed writer left, and never what a live one is still writing.
A new file or directory gets the usual permissions (0666 or 0777 less the umask); one that replaces
another keeps the mode of what it replaces.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any

from sbert.base.errors import ModelLoadError

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on error it is removed.

    A reader never sees a half-written file, and a failed write leaves the previous file intact.

    Examples:
        >>> import numpy as np, tempfile, os
        >>> target = os.path.join(tempfile.mkdtemp(), "vectors.npy")
        >>> with atomic_path(target) as tmp, tmp.open("wb") as handle:  # a handle: np.save(path) adds .npy
        ...     np.save(handle, np.zeros(3))
        >>> np.load(target).shape
        (3,)
    """
    path = Path(os.path.realpath(path))  # a link's target is replaced; the link stays
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, name = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, _mode_for(path, 0o666))  # mkstemp makes 0600: readable by others only once complete
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_json(path: Path, *, or_none: bool = False) -> Any:
    """The JSON in ``path``; what a missing or broken file gives is the caller's explicit choice.

    Args:
        path: The file.
        or_none: ``False`` (a file a model needs): a missing file, or one that is not valid JSON,
            raises :class:`~sbert.base.errors.ModelLoadError` naming it (and where the syntax
            fails). ``True`` (a marker that may not be one): ``None`` for a file that is missing,
            unreadable or not JSON.

    Examples:
        >>> read_json(Path("no-such.json"), or_none=True) is None
        True
        >>> read_json(Path("no-such.json"))
        Traceback (most recent call last):
        ...
        sbert.base.errors.ModelLoadError: no-such.json: missing
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        if or_none:
            return None
        if isinstance(error, FileNotFoundError):
            raise ModelLoadError(f"{path}: missing") from error
        if isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
            raise ModelLoadError(f"{path}: not valid JSON: {error}") from error
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a text file atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def staging_dir(target: str | Path) -> Path:
    """A new empty directory beside ``target`` to build its next version in, for :func:`replace_dir`.

    Examples:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "index"
        >>> staging = staging_dir(target)
        >>> (staging / "data.txt").write_text("new")
        3
        >>> replace_dir(staging, target)
        >>> (target / "data.txt").read_text()
        'new'
    """
    target = Path(os.path.realpath(target))  # beside a link's target, which replace_dir replaces
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    return Path(tempfile.mkdtemp(prefix=_temporary_prefix(target), suffix=".tmp", dir=target.parent))


def replace_dir(new: Path, target: Path) -> None:
    """Move the directory ``new`` to ``target``; at every instant ``target`` is the old or the new one.

    An existing ``target`` is swapped with ``new`` in one atomic step, then removed from ``new``'s
    name. Where the platform or file system has no atomic exchange (not Linux, or a file system
    without ``RENAME_EXCHANGE``), it falls back to two renames, with an instant between them at
    which ``target`` is missing.
    """
    new, target = Path(new), Path(os.path.realpath(target))  # a link stays, pointing at the new copy
    os.chmod(new, _mode_for(target, 0o777))
    if not os.path.lexists(target):
        os.replace(new, target)
    elif _exchange(new, target):
        _between_steps()
        shutil.rmtree(new, ignore_errors=True)  # the old copy, now under the temporary name
    else:
        old = target.with_name(f"{_temporary_prefix(target)}{secrets.token_hex(4)}.tmp")
        os.replace(target, old)
        _between_steps()
        try:
            os.replace(new, target)
        except BaseException:
            os.replace(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
    remove_stale_temporaries(target)


def _between_steps() -> None:
    """Runs while both copies exist, between the steps of :func:`replace_dir` (the crash test pauses here)."""


def remove_stale_temporaries(target: str | Path) -> None:
    """Remove the temporary files and directories of ``target`` whose writer process has died."""
    target = Path(target)
    pattern = re.compile(re.escape(f".{target.name}.") + r"(\d+)\.[a-z0-9_]{8}\.tmp")
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or _alive(int(match.group(1))):
            continue
        with suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def _temporary_prefix(target: Path) -> str:
    return f".{target.name}.{os.getpid()}."


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on platforms where that cannot be asked safely: assumed so)."""
    if pid == os.getpid() or os.name != "posix":  # on Windows, os.kill(pid, 0) would end the process
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's live process
        return True
    return True


def _mode_for(target: Path, default: int) -> int:
    """``target``'s permission bits if it exists, else ``default`` less the umask."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return default & ~_umask()


def _umask() -> int:
    # Linux shows it without changing it (thread-safe); elsewhere it is set and set back.
    with suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically; ``False`` where this platform or file system cannot."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # a file system without the flag
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


@cache
def _renameat2() -> Callable[..., int] | None:
    """glibc's ``renameat2`` (2.28 and later), or ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]
