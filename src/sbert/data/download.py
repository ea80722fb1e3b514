"""``sbert data download``: the public releases of the evaluation data, fetched into the layout sbert reads.

Each source is fetched from its original home (the addresses SentEval's ``get_transfer_data.bash``
uses), or from a mirror holding the same files under their base names (``--mirror URL`` or
``$SBERT_DATA_MIRROR``; ``file://`` and ``http://`` both work). Downloads resume: a ``.part`` file
continues with an HTTP range request where the server offers one, and is fetched again from the
start where it does not. Every file lands under a temporary name and is renamed into place.

**Checksums.** No archive hash is written into this table: this project's machines have no
internet, so none could be verified, and none is invented. A download is trusted only once it is
whole: its size equals the size the server announced (``Content-Length``, ``Content-Range``), its
SHA-256 equals the one the mirror publishes in its own ``SHA256SUMS`` (where it has one), and the
archive reads to the end (every zip member's CRC, the whole tar.gz stream). Only then is its SHA-256
recorded in ``DIR/.downloads/ARCHIVES.sha256``; a later download of the same source (a re-run,
another mirror) must give the same bytes or is refused. A download that stopped early keeps its
``.part`` and continues on the next run; a damaged one is deleted and nothing is recorded, and a
damaged resumed one is fetched once more from the start. Every file written into the layout is
listed with its SHA-256 in ``DIR/SHA256SUMS`` (the ``sha256sum -c`` format), which ``sbert data
check`` verifies.

**What you get.** The files as their authors publish them, not SentEval's Moses-tokenized and
lower-cased copies: STS12-16 land in ``sts12-16/original/`` (which sbert reads by default), SICK and
MR/CR/SUBJ/MPQA/SNLI keep their original text (SentEval's copies are tokenized), and TREC keeps
the quote marks SentEval's script strips. Scores read from these files can therefore differ in
the last digit from figures computed on SentEval's copies. BEIR's SciFact and NFCorpus (retrieval,
not in the paper) come only when named (``--only SciFact NFCorpus``) and land in ``beir/<name>/``,
the folder ``sbert evaluate retrieval`` reads.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from sbert.base.files import atomic_path
from sbert.base.outputs import OutputKind, claiming
from sbert.data.sources import (  # noqa: F401 (the table is part of this module's interface)
    BEIR_DIR,
    BEIR_SETS,
    DATASETS,
    DEFAULT_DATASETS,
    SOURCES,
    Source,
)

logger = logging.getLogger("sbert")

MIRROR_ENV = "SBERT_DATA_MIRROR"
SUMS_FILE = "SHA256SUMS"
ARCHIVE_SUMS = ".downloads/ARCHIVES.sha256"
_CHUNK = 1 << 20


class ChecksumError(ValueError):
    """A file's SHA-256 differs from the one recorded for it."""


class DownloadError(OSError):
    """A download arrived short, damaged or unlike its published checksum; nothing was recorded."""


def outputs(source: Source) -> list[str]:
    """The data-directory paths ``source`` writes."""
    return list(source.members) if source.convert else list(source.members.values())


def _is_data_dir(folder: Path) -> bool:
    """Checksums, an unfinished download, or a data set's folder (one written by hand counts too)."""
    names = {SUMS_FILE, ".downloads"} | {path.split("/")[0] for source in SOURCES for path in outputs(source)}
    return any((folder / name).exists() for name in names)


# Written in place, file by file: whatever else the data directory holds is left alone.
DATA_DIR = OutputKind("data directory", recognise=_is_data_dir)


@claiming("data_dir", DATA_DIR)
def download(
    data_dir: str | Path,
    datasets: tuple[str, ...] | list[str] = DEFAULT_DATASETS,
    mirror: str | None = None,
    on_progress: Callable[[str], None] = lambda message: None,
) -> list[str]:
    """Fetch ``datasets`` into ``data_dir``; returns the paths written. Sources already in place are skipped.

    Args:
        data_dir: The data directory (created if missing; a folder of other files is refused, see
            :mod:`sbert.base.outputs`).
        datasets: Names from :data:`DATASETS` (default: :data:`DEFAULT_DATASETS`, the paper's; BEIR's
            ``SciFact`` and ``NFCorpus`` only when named).
        mirror: Base URL holding every file under its base name (default: ``$SBERT_DATA_MIRROR``,
            else each file's original home).

    Raises:
        ValueError: an unknown data set name, or a mirror that is not a URL.
        ChecksumError: an archive differs from the one downloaded before.
        DownloadError: a download arrived short, damaged, or unlike the mirror's published checksum.
        OSError: a source could not be reached (the message names its URL).
    """
    unknown = sorted(set(datasets) - set(DATASETS))
    if unknown:
        raise ValueError(f"unknown data set {', '.join(unknown)}; choose from {', '.join(DATASETS)}")
    root = Path(data_dir).expanduser()
    mirror = _mirror_url(mirror or os.environ.get(MIRROR_ENV) or None)
    published = _published_sums(mirror) if mirror else {}
    written: list[str] = []
    for source in SOURCES:
        if source.dataset not in datasets:
            continue
        if all(_verified(root, path) for path in outputs(source)):
            on_progress(f"{source.dataset}: {source.name} already in place")
            continue
        url = f"{mirror.rstrip('/')}/{source.name}" if mirror else source.url
        on_progress(f"{source.dataset}: fetching {url}")
        archive, files = _fetch_whole(
            source, url, root / ".downloads" / source.name, published.get(source.name)
        )
        _check_archive(root, source.name, archive)  # recorded only now, once the download is whole
        for relative, content in files.items():
            with atomic_path(root / relative) as tmp:
                tmp.write_bytes(content)
            _record(root / SUMS_FILE, relative, hashlib.sha256(content).hexdigest())
            written.append(relative)
        archive.unlink()
    return written


def check(data_dir: str | Path) -> tuple[list[str], list[str], list[str]]:
    """Verify ``data_dir`` against its ``SHA256SUMS``: (good, bad, missing) relative paths.

    ``missing`` also lists what a source would write but nothing does, so a half-filled folder shows
    (for a source fetched only when named, once any of its files is recorded).
    """
    root = Path(data_dir).expanduser()
    sums = _read_sums(root / SUMS_FILE)
    good, bad, missing = [], [], []
    for relative, expected in sorted(sums.items()):
        path = root / relative
        if not path.is_file():
            missing.append(relative)
        elif _sha256(path) == expected:
            good.append(relative)
        else:
            bad.append(relative)
    expected_files = {
        path
        for source in SOURCES
        if source.default or set(outputs(source)) & set(sums)
        for path in outputs(source)
    }
    missing += sorted(path for path in expected_files - set(sums) if not (root / path).is_file())
    return good, bad, missing


def _verified(root: Path, relative: str) -> bool:
    expected = _read_sums(root / SUMS_FILE).get(relative)
    return expected is not None and (root / relative).is_file() and _sha256(root / relative) == expected


def _mirror_url(mirror: str | None) -> str | None:
    """A mirror must be a URL: a bare folder gets the ``file://`` URL it probably meant."""
    if mirror and "://" not in mirror:
        raise ValueError(
            f"mirror {mirror!r} is not a URL; for a local folder use {Path(mirror).expanduser().resolve().as_uri()}"
        )
    return mirror


def _published_sums(mirror: str) -> dict[str, str]:
    """The mirror's own ``SHA256SUMS`` (``sha256sum`` format), or nothing where it publishes none."""
    try:
        with urllib.request.urlopen(f"{mirror.rstrip('/')}/{SUMS_FILE}", timeout=60) as response:
            text = response.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, TimeoutError):
        return {}
    sums = {}
    for line in text.splitlines():
        digest, _, name = line.strip().partition(" ")
        if len(digest) == 64 and name:
            sums[PurePosixPath(name.strip().lstrip("*")).name] = digest.lower()
    return sums


def _fetch_whole(
    source: Source, url: str, target: Path, published: str | None
) -> tuple[Path, dict[str, bytes]]:
    """Fetch ``source`` and check it is whole (size, published SHA-256, archive read to the end).

    A damaged download is deleted; where it continued a ``.part``, it is fetched once more from the
    start (the ``.part`` may have come from elsewhere).
    """
    for attempt in range(2):
        archive, resumed = _fetch(url, target)
        try:
            digest = _sha256(archive) if published else None
            if published and digest != published:
                raise DownloadError(
                    f"{source.name} from {url}: SHA-256 {digest} differs from {published} published in the "
                    f"mirror's {SUMS_FILE}; the download is damaged or the mirror holds another file"
                )
            return archive, _unpack(source, archive)
        except DownloadError:
            archive.unlink(missing_ok=True)
            if not (resumed and attempt == 0):
                raise
            logger.warning(
                "%s: the resumed download is damaged; fetching it again from the start", source.name
            )
    raise AssertionError("unreachable")


def _fetch(url: str, target: Path) -> tuple[Path, bool]:
    """Download ``url`` to ``target``, continuing a ``.part`` left by an interrupted run.

    Returns the file and whether it continued a ``.part``.

    Raises:
        DownloadError: fewer bytes arrived than the server announced (the ``.part`` is kept, so the
            next run continues it) or more (the ``.part`` is deleted).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            resumed = bool(have) and (getattr(response, "status", None) == 206 or url.startswith("file:"))
            expected = _announced_size(response, have if resumed else 0)
            if resumed and url.startswith("file:"):
                response.read(have)  # a local file has no range requests: skip what is there
                expected = _announced_size(response, 0)  # a file:// length is the whole file's
            with part.open("ab" if resumed else "wb") as out:
                shutil.copyfileobj(response, out, _CHUNK)
    except urllib.error.HTTPError as error:
        if error.code == 416 and have:  # the .part already holds everything
            os.replace(part, target)
            return target, True
        raise OSError(f"{url}: HTTP {error.code} {error.reason}") from error
    except (urllib.error.URLError, TimeoutError) as error:
        raise OSError(
            f"{url}: cannot download ({getattr(error, 'reason', error)}); offline? use --mirror"
        ) from error
    size = part.stat().st_size
    if expected is not None and size < expected:
        raise DownloadError(
            f"{url}: the download stopped at {size} of {expected} bytes; run the same command again to continue it"
        )
    if expected is not None and size > expected:
        part.unlink()
        raise DownloadError(
            f"{url}: {size} bytes arrived, {expected} were announced; the download was deleted"
        )
    os.replace(part, target)
    return target, resumed


def _announced_size(response: Any, offset: int) -> int | None:
    """The whole file's size as the answer announces it: ``Content-Range``'s total, else the length."""
    total = (response.headers.get("Content-Range") or "").rpartition("/")[2]
    if total.isdigit():
        return int(total)
    length = response.headers.get("Content-Length")
    return offset + int(length) if length and length.isdigit() else None


def _check_archive(root: Path, name: str, archive: Path) -> None:
    """Refuse an archive whose bytes differ from the one recorded at the first download."""
    digest = _sha256(archive)
    recorded = _read_sums(root / ARCHIVE_SUMS).get(name)
    if recorded is None:
        _record(root / ARCHIVE_SUMS, name, digest)
    elif recorded != digest:
        archive.unlink()
        raise ChecksumError(
            f"{name}: SHA-256 {digest} differs from {recorded} recorded in {root / ARCHIVE_SUMS} "
            "at the first download; the source changed or the download is corrupt (if you trust the "
            f"new file, delete the line for {name} there and run again)"
        )


def _unpack(source: Source, archive: Path) -> dict[str, bytes]:
    """The data-directory files of ``source``: path → content."""
    if "" in source.members:  # a plain file
        return {source.members[""]: archive.read_bytes()}
    try:  # read to the end: a truncated stream or a bad CRC raises here, before anything is trusted
        if source.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(archive, "r:gz") as tar:
                contents = {
                    member.name: tar.extractfile(member).read()  # type: ignore[union-attr]
                    for member in tar.getmembers()
                    if member.isfile()
                }
        else:
            with zipfile.ZipFile(archive) as zipped:
                contents = {name: zipped.read(name) for name in zipped.namelist() if not name.endswith("/")}
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise DownloadError(
            f"{source.name}: not a readable archive ({type(error).__name__}: {error}); it was deleted and "
            "nothing was recorded: run the same command again"
        ) from None
    if source.convert:
        return source.convert(contents)
    absent = [member for member in source.members if member not in contents]
    if absent:
        raise ValueError(f"{source.name}: the archive lacks {', '.join(absent)}")
    return {target: contents[member] for member, target in source.members.items()}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_sums(path: Path) -> dict[str, str]:
    """``sha256sum`` lines (``HASH  ./relative/path``) → {relative path: hash}."""
    if not path.is_file():
        return {}
    sums = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        if name:
            sums[name.removeprefix("./")] = digest
    return sums


def _record(path: Path, relative: str, digest: str) -> None:
    sums = _read_sums(path)
    sums[relative] = digest
    text = "".join(f"{value}  ./{key}\n" for key, value in sorted(sums.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
