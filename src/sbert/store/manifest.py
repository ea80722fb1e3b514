"""The store's ``manifest.json``: what made the vectors, how they are stored, and one record per shard.

The manifest is the only file a reader trusts: a shard exists for the store once its record is in
the manifest, and the manifest is replaced atomically after each shard, so a killed run leaves a
manifest that describes exactly the shards that were finished.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass
from typing import Any

from pyarrow import fs as pafs

from sbert.base import json_text
from sbert.base.files import read_json
from sbert.base.outputs import OutputKind

FORMAT = "sbert-embedding-store"
VERSION = 1
MANIFEST = "manifest.json"


def _is_store(folder: Any) -> bool:
    """A store's manifest, or a damaged one (left to :func:`read_manifest` to explain)."""
    if not (folder / MANIFEST).is_file():
        return False
    manifest = read_json(folder / MANIFEST, or_none=True)
    return manifest is None or (isinstance(manifest, dict) and manifest.get("format") == FORMAT)


# A store is written in place, shard by shard: files of the user's in its folder are left alone.
STORE = OutputKind("store", recognise=_is_store)
STORE_DTYPES = ("float32", "float16", "int8")

# Fields that must match for a run to continue a store; a difference is named in the refusal.
SETTINGS_FIELDS = (
    "input",
    "precision",
    "dtype",
    "normalized",
    "shard_size",
    "chunk_rows",
    "row_group_size",
    "texts",
    "id_column",
    "prompt",
)


class StoreError(ValueError):
    """A store that cannot be read, written or continued; the message names the file and the problem."""


@dataclass(frozen=True)
class ShardRecord:
    """One Parquet shard: rows ``start`` to ``stop`` (exclusive) of the store.

    Attributes:
        file: File name inside the store directory.
        start: First row number held by the shard.
        stop: One past the last row number.
        sha256: SHA-256 of the file's bytes.
        input_sha256: SHA-256 of the ids and texts that were encoded, to refuse a changed input on resume.
        skipped_lines: Malformed input lines skipped while reading this shard's rows.
    """

    file: str
    start: int
    stop: int
    sha256: str
    input_sha256: str = ""
    skipped_lines: int = 0

    @property
    def rows(self) -> int:
        return self.stop - self.start

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def shard_name(index: int) -> str:
    return f"shard-{index:05d}.parquet"


def read_manifest(filesystem: pafs.FileSystem, directory: str) -> dict[str, Any]:
    """The parsed and checked manifest of the store at ``directory``.

    Raises:
        StoreError: the file is missing, not JSON, not an sbert store, or lacks a field; the
            message names the file.
    """
    path = posixpath.join(directory, MANIFEST)
    try:
        with filesystem.open_input_stream(path) as stream:
            raw = stream.read()
    except FileNotFoundError:
        raise StoreError(f"{path}: no such file; {directory} is not an sbert embedding store") from None
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StoreError(f"{path}: not valid JSON ({error}); the manifest is corrupt") from None
    check_manifest(manifest, path)
    return manifest


def check_manifest(manifest: Any, where: str) -> None:
    """Refuse a manifest of another format or version, or one with missing or inconsistent fields."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise StoreError(f"{where}: not an sbert embedding store manifest (no format {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise StoreError(
            f"{where}: store format version {manifest.get('version')!r}; this sbert reads {VERSION}"
        )
    required = ("complete", "rows", "dim", "dtype", "normalized", "model", "shards", "row_group_size")
    missing = [key for key in required if key not in manifest]
    if missing:
        raise StoreError(f"{where}: the manifest lacks {', '.join(missing)}")
    if manifest["dtype"] not in STORE_DTYPES:
        raise StoreError(f"{where}: unknown dtype {manifest['dtype']!r}")
    try:
        shards = [ShardRecord(**record) for record in manifest["shards"]]
    except TypeError as error:
        raise StoreError(f"{where}: a shard record is malformed ({error})") from None
    expected = 0
    for shard in shards:
        if shard.start != expected or shard.stop < shard.start:
            raise StoreError(
                f"{where}: shard {shard.file} covers rows {shard.start}-{shard.stop}, expected to start at {expected}"
            )
        expected = shard.stop
    if expected != manifest["rows"]:
        raise StoreError(f"{where}: the shards hold {expected} rows, the manifest says {manifest['rows']}")


def write_manifest(filesystem: pafs.FileSystem, directory: str, manifest: dict[str, Any]) -> None:
    """Replace the manifest atomically: written beside it, then moved over it."""
    path = posixpath.join(directory, MANIFEST)
    tmp = posixpath.join(directory, f".{MANIFEST}.tmp")
    with filesystem.open_output_stream(tmp) as stream:
        stream.write((json_text.dumps(manifest, indent=1) + "\n").encode("utf-8"))
    filesystem.move(tmp, path)


def settings_differences(stored: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """``"precision 'float32' vs 'auto'"``-style lines for each setting that differs (stored vs given)."""
    differences = []
    for key in SETTINGS_FIELDS:
        old, new = stored.get(key), given.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            differences += [
                f"input {field} {old.get(field)!r} vs {new.get(field)!r}"
                for field in sorted(set(old) | set(new))
                if old.get(field) != new.get(field)
            ]
        else:
            differences.append(f"{key} {old!r} vs {new!r}")
    return differences


def resolve_location(
    path: str | Any, filesystem: pafs.FileSystem | None = None
) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and path for a local path or a URI (``s3://``, ``gs://``, ``hdfs://``...).

    Examples:
        >>> resolve_location("/tmp/store")[1]
        '/tmp/store'
    """
    text = str(path)
    if filesystem is not None:
        return filesystem, text
    if "://" in text:
        return pafs.FileSystem.from_uri(text)
    import os

    return pafs.LocalFileSystem(), os.path.abspath(text)
