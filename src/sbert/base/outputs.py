"""The one rule for every command and function that writes a folder or a file: what it may write over.

Decided by :func:`claim_output` before any work starts, and nowhere else:

- a new path, or an empty folder, is written;
- an sbert artifact of the same kind (known by a marker only sbert writes: an index's or a store's
  ``manifest.json``, a model's ``config_sentence_transformers.json`` naming sbert's version or a
  cross-encoder's ``sbert_cross_encoder.json``, a training run's ``training_log.jsonl``, ...) is
  written again. A kind that knows the entries it writes (a model, an index, a training run) refuses
  a folder that also holds any other, since its rewrite would delete or replace them; a kind
  written in place with no such list (a store, a report, a data folder) leaves them alone;
- a file output replaces a regular file, never a folder;
- anything else is refused with the path and the reason, and left untouched.

A symbolic link is followed (its target is written and the link stays), except by a model or a
training run, which refuse it, naming it and its target. One writer at a time: the output is locked
(``fcntl.flock`` on ``.NAME.lock`` beside it, holding the writer's pid, removed on release), and a
second writer is refused with :class:`OutputInUseError` naming that pid. A full disk while writing
is reported with the output's path (:class:`OutputDiskFullError`).
"""

from __future__ import annotations

import errno
import functools
import inspect
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from sbert.base.files import read_json

try:
    import fcntl
except ImportError:  # Windows: no advisory lock; the rest of the rule still holds
    fcntl = None  # type: ignore[assignment]


class OutputRefusedError(FileExistsError):
    """The output path holds something the writer must not replace; nothing was touched."""


class OutputInUseError(OSError):
    """Another process is writing the same output."""


class OutputDiskFullError(OSError):
    """The disk filled up while writing an output; the message names it."""


@dataclass(frozen=True)
class OutputKind:
    """What a writer writes, and how to recognise one it wrote before.

    Attributes:
        name: Shown in messages ("index", "store", ...).
        recognise: Whether an existing folder is an artifact of this kind (by its marker file).
        owns: Whether an entry of such a folder is one this kind writes: any other is refused, since
            a rewrite would delete (a swap) or replace it. ``None``: other entries are left alone.
        file: A single file (replaces a regular file), not a folder.
        in_place: Written entry by entry, not swapped in whole (what a full disk leaves differs).
        links: A symbolic link at the path is followed; ``False``: refused, naming it.
    """

    name: str
    recognise: Callable[[Path], bool] = lambda folder: False
    owns: Callable[[Path, str], bool] | None = None
    file: bool = False
    in_place: bool = False
    links: bool = True


MODEL_FILES = frozenset(
    {
        "modules.json",
        "config_sentence_transformers.json",
        "sentence_bert_config.json",
        "config.json",
        "model.safetensors",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "added_tokens.json",
        "sentencepiece.bpe.model",
        "spiece.model",
        "tokenizer.model",
        "chat_template.jinja",
        "distill.json",
        "sbert_cross_encoder.json",
    }
)


def _module_folders(folder: Path) -> set[str]:
    modules = read_json(folder / "modules.json", or_none=True)
    entries = modules if isinstance(modules, list) else []
    paths = (entry.get("path") for entry in entries if isinstance(entry, dict))
    return {path.replace("\\", "/").split("/")[0] for path in paths if isinstance(path, str) and path}


def written_by_sbert(folder: Path) -> bool:
    """Whether ``folder`` holds a model sbert saved: its marker, which no other library writes (not
    ``config.json`` or ``modules.json``, which every Hugging Face or sentence-transformers folder has).

    The marker is ``config_sentence_transformers.json``'s ``__version__`` naming sbert (where
    sentence-transformers names itself; it reads the file as before) or, for a cross-encoder,
    ``sbert_cross_encoder.json`` with ``sbert_version``.

    Examples:
        >>> import json, tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> settings = {"__version__": {"sentence_transformers": "6.2.0"}}
        >>> _ = (folder / "config_sentence_transformers.json").write_text(json.dumps(settings))
        >>> written_by_sbert(folder)
        False
        >>> settings = {"__version__": {"sbert": "0.1.0"}}
        >>> _ = (folder / "config_sentence_transformers.json").write_text(json.dumps(settings))
        >>> written_by_sbert(folder)
        True
    """
    settings = read_json(folder / "config_sentence_transformers.json", or_none=True)
    version = settings.get("__version__") if isinstance(settings, dict) else None
    if isinstance(version, dict) and "sbert" in version:
        return True
    cross_encoder = read_json(folder / "sbert_cross_encoder.json", or_none=True)
    return isinstance(cross_encoder, dict) and "sbert_version" in cross_encoder


def is_sbert_temporary(name: str) -> bool:
    """Whether ``name`` is one of sbert's own temporaries (:mod:`sbert.base.files`) or locks."""
    return bool(re.fullmatch(r"\..+\.\d+\.[a-z0-9_]{8}\.tmp|\..+\.lock", name))


MODEL = OutputKind(
    "model",
    recognise=written_by_sbert,
    owns=lambda folder, name: name in MODEL_FILES or name in _module_folders(folder),
    links=False,
)
FILE = OutputKind("file", file=True)

Function = TypeVar("Function", bound=Callable[..., Any])

_held: dict[Path, int] = {}  # outputs this process has claimed: a nested claim is the same writer
_held_lock = threading.Lock()


@contextmanager
def claim_output(path: str | Path, kind: OutputKind) -> Iterator[Path]:
    """Check ``path`` against the rule, lock it, and yield where to write (a link's target).

    Raises:
        OutputRefusedError: ``path`` holds something that is not a ``kind`` (named, untouched).
        OutputInUseError: another process is writing ``path`` (its pid is named).
        OutputDiskFullError: the disk filled up inside the block (the message names ``path``).

    Examples:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> (folder / "notes.txt").write_text("mine")
        4
        >>> with claim_output(folder / "vectors.npy", FILE) as target:
        ...     _ = target.write_bytes(b"...")
        >>> try:
        ...     with claim_output(folder, MODEL):
        ...         pass
        ... except OutputRefusedError as error:
        ...     print("refused:", "notes.txt" in str(error))
        refused: True
    """
    if not kind.links and os.path.islink(path):
        raise OutputRefusedError(
            f"{path}: refusing to write a {kind.name} through a symbolic link (to {os.readlink(path)}): "
            "give the folder it points to, or another output"
        )
    target = Path(os.path.realpath(path))
    with _held_lock:
        nested = target in _held
        if nested:
            _held[target] += 1
    if nested:  # the same writer again (a command, then the function it calls): decided already
        try:
            yield target
        finally:
            with _held_lock:
                _held[target] -= 1
        return
    handle = _lock(target, kind)  # first: a writer at work is named, not what it has written so far
    try:
        check_output(target, kind)
    except BaseException:
        _unlock(handle)
        raise
    with _held_lock:
        _held[target] = 1
    try:
        yield target
    except BaseException as error:
        if _disk_full(error) and str(target) not in str(error):
            swapped = (kind.owns is not None and not kind.in_place) or kind.file
            kept = f"what was at {target} before is untouched" if swapped else "what was finished is kept"
            full = OutputDiskFullError(
                f"no space left on device while writing {kind.name} {target} ({error}); {kept}: "
                "free some space and run the same command again"
            )
            full.errno = errno.ENOSPC  # set apart: in the constructor it would prefix the message
            raise full from error
        raise
    finally:
        with _held_lock:
            del _held[target]
        _unlock(handle)


def claiming(parameter: str, kind: OutputKind) -> Callable[[Function], Function]:
    """Decorate a writer: its argument ``parameter`` is claimed (:func:`claim_output`) for the call.

    The function gets the path to write (a link's target). A URI (``s3://...``) or a call given a
    pyarrow ``filesystem`` is passed through unclaimed: the rule and the lock are for local paths.

    Examples:
        >>> import tempfile
        >>> @claiming("output", FILE)
        ... def write(text: str, output: Path) -> None:
        ...     output.write_text(text)
        >>> folder = Path(tempfile.mkdtemp())
        >>> write("done", folder)
        Traceback (most recent call last):
        ...
        sbert.base.outputs.OutputRefusedError: ...: refusing to replace it with a file: it is a folder
    """

    def decorate(function: Function) -> Function:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def claimed(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            path = bound.arguments[parameter]
            options = bound.arguments.get("options")  # a filesystem may come inside an options dataclass
            filesystem = bound.arguments.get("filesystem") or getattr(options, "filesystem", None)
            if "://" in str(path) or filesystem is not None:
                return function(*args, **kwargs)
            with claim_output(path, kind) as target:
                bound.arguments[parameter] = target
                return function(*bound.args, **bound.kwargs)

        return cast(Function, claimed)

    return decorate


def check_output(path: Path, kind: OutputKind) -> None:
    """Refuse ``path`` unless the rule lets a ``kind`` be written there (see the module docstring)."""
    if not os.path.lexists(path):
        return
    refuse = f"{path}: refusing to replace it"
    if kind.file:
        if os.path.isdir(path):
            raise OutputRefusedError(f"{refuse} with a file: it is a folder")
        if not os.path.isfile(path):
            raise OutputRefusedError(f"{refuse}: it is not a regular file")
        return
    if not os.path.isdir(path):
        raise OutputRefusedError(f"{refuse} with a {kind.name} (a folder): it exists and is not a folder")
    entries = sorted(os.listdir(path))
    if not entries:
        return
    if not kind.recognise(path):
        raise OutputRefusedError(
            f"{refuse}: it is not empty and holds no sbert {kind.name} ({_shown(entries)}); "
            "choose another output, or an empty folder"
        )
    if kind.owns is not None:
        foreign = [name for name in entries if not (kind.owns(path, name) or is_sbert_temporary(name))]
        if foreign:
            how = "written again entry by entry" if kind.in_place else "rebuilt by replacing the whole folder"
            raise OutputRefusedError(
                f"{refuse}: the {kind.name} there is {how}, which also holds {_shown(foreign)}, not "
                "written by sbert; move them out, or choose another output"
            )


def _shown(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def _lock(target: Path, kind: OutputKind) -> tuple[int, Path] | None:
    """An exclusive ``flock`` on ``.NAME.lock`` beside ``target``, holding this pid (``None``: no fcntl)."""
    if fcntl is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = lock_path(target)
    while True:
        handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, what = os.read(handle, 200).decode("utf-8", "replace").strip().partition(" ")
            os.close(handle)
            raise OutputInUseError(
                f"{target}: in use by pid {pid or 'unknown'}, which is writing {what or 'it'} there; "
                "wait for it to finish, or choose another output"
            ) from None
        try:  # the last holder removes the file on release: lock only the file still at that name
            current = os.stat(lock).st_ino == os.fstat(handle).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(handle)
    os.ftruncate(handle, 0)
    os.write(handle, f"{os.getpid()} {_article(kind.name)} {kind.name}\n".encode())
    return handle, lock


def _article(name: str) -> str:
    return "an" if name[0] in "aeiou" else "a"


def _unlock(held: tuple[int, Path] | None) -> None:
    if held is None:
        return
    handle, lock = held
    with suppress(OSError):
        os.unlink(lock)  # before the unlock: a waiter that opened it sees it gone and opens anew
    os.close(handle)


def lock_path(target: Path) -> Path:
    """The lock file of ``target``: beside it, since a swapped-in folder is a new inode."""
    return target.with_name(f".{target.name}.lock")


def _disk_full(error: BaseException) -> bool:
    return (isinstance(error, OSError) and error.errno == errno.ENOSPC) or "No space left" in str(error)
