"""Writing a store: Parquet shards written under a temporary name and moved into place when complete,
then recorded in the manifest, so that a killed run leaves only finished shards behind.

Example:
    >>> import numpy as np, tempfile
    >>> from sbert.store import EmbeddingStore
    >>> settings = {"dim": 4, "dtype": "float32", "normalized": False, "model": {}}
    >>> writer = StoreWriter.open(tempfile.mkdtemp() + "/store", settings)
    >>> with writer.shard() as shard:
    ...     shard.write(np.arange(3), ["a", "b", "c"], np.ones((3, 4), dtype="float32"))
    >>> writer.finish()
    >>> len(EmbeddingStore.open(writer.directory))
    3
"""

from __future__ import annotations

import errno
import hashlib
import logging
import posixpath
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sbert.store.manifest import (
    FORMAT,
    MANIFEST,
    VERSION,
    ShardRecord,
    StoreError,
    read_manifest,
    resolve_location,
    settings_differences,
    shard_name,
    write_manifest,
)

logger = logging.getLogger("sbert")

DEFAULT_ROW_GROUP_SIZE = 256  # small row groups: a random row decodes 256 rows, not a shard (a
# fixed-size list column decodes at only about 50k rows/s in pyarrow, so this matters)


class StoreDiskFullError(OSError):
    """The disk filled up while writing; every finished shard is intact and the run can be resumed."""


def embedding_type(dtype: str, dim: int) -> pa.DataType:
    return pa.list_(pa.from_numpy_dtype(np.dtype(dtype)), dim)


def store_schema(dtype: str, dim: int, texts: bool) -> pa.Schema:
    fields = [pa.field("id", pa.int64(), nullable=False)]
    if texts:
        fields.append(pa.field("text", pa.string()))
    fields.append(pa.field("embedding", embedding_type(dtype, dim), nullable=False))
    return pa.schema(fields)


def input_digest(ids: np.ndarray, texts: Sequence[str]) -> hashlib._Hash:
    """A running SHA-256 of the ids and texts a shard was made from; ``update_input_digest`` adds a chunk."""
    digest = hashlib.sha256()
    update_input_digest(digest, ids, texts)
    return digest


def update_input_digest(digest: hashlib._Hash, ids: np.ndarray, texts: Sequence[str]) -> None:
    """Row by row, so that the digest does not depend on how the rows were split into chunks."""
    id_bytes = np.ascontiguousarray(ids, dtype="<i8").tobytes()
    for row, text in enumerate(texts if texts else [""] * len(ids)):
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(id_bytes[8 * row : 8 * row + 8] + len(encoded).to_bytes(8, "little") + encoded)


class StoreWriter:
    """Creates a store, or continues one whose settings match, one shard at a time.

    Use :meth:`open`, then ``with writer.shard() as shard: shard.write(...)`` once per shard, then
    :meth:`finish`. ``settings`` holds ``dim``, ``dtype``, ``normalized``, ``model`` (an identity
    dict) and the run's fields of :data:`~sbert.store.manifest.SETTINGS_FIELDS`.
    """

    def __init__(self, filesystem: pafs.FileSystem, directory: str, manifest: dict[str, Any]) -> None:
        self.filesystem = filesystem
        self.directory = directory
        self.manifest = manifest

    @classmethod
    def open(
        cls,
        path: str,
        settings: dict[str, Any],
        overwrite: bool = False,
        filesystem: pafs.FileSystem | None = None,
    ) -> StoreWriter:
        """A writer for a new store at ``path``, or for the unfinished (or finished) store there.

        Raises:
            StoreError: ``path`` holds files that are not a store (never touched), or a store made
                with other settings (the message lists them; ``overwrite=True`` starts again).
        """
        fs, directory = resolve_location(path, filesystem)
        settings = {"row_group_size": DEFAULT_ROW_GROUP_SIZE, "texts": True, **settings}
        existing = existing_store(fs, directory)
        if existing is not None and (overwrite or not existing["shards"]):
            # Without a finished shard there is nothing to keep: a run that failed on its input
            # (bad UTF-8, say) must not block the corrected run with its settings.
            _remove_store_files(fs, directory)
            existing = None
        if existing is not None:
            differences = settings_differences(existing, settings)
            if existing["dim"] != settings["dim"]:
                differences.append(f"dim {existing['dim']} vs {settings['dim']}")
            if differences:
                raise StoreError(
                    f"{directory} holds a store made with other settings: {'; '.join(differences)} "
                    "(stored vs given). Run with the same settings to continue it, or --overwrite to start again."
                )
            writer = cls(fs, directory, existing)
            writer._clean()
            writer._drop_damaged_shards()
            return writer
        fs.create_dir(directory, recursive=True)
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "complete": False,
            "rows": 0,
            "skipped_lines": 0,
            **settings,
            "quantization_ranges": settings.get("quantization_ranges"),
            "shards": [],
        }
        writer = cls(fs, directory, manifest)
        write_manifest(fs, directory, manifest)
        return writer

    @property
    def rows(self) -> int:
        """Rows in finished shards: where a resumed run starts."""
        return int(self.manifest["rows"])

    @property
    def shards(self) -> list[ShardRecord]:
        return [ShardRecord(**record) for record in self.manifest["shards"]]

    @property
    def complete(self) -> bool:
        return bool(self.manifest["complete"])

    def set_field(self, key: str, value: Any) -> None:
        """Record a field (e.g. the int8 quantization ranges) before the first shard is written."""
        self.manifest[key] = value
        write_manifest(self.filesystem, self.directory, self.manifest)

    def shard(self) -> ShardWriter:
        """A writer for the next shard, starting at row :attr:`rows`."""
        if self.complete:
            raise StoreError(f"{self.directory}: the store is complete; nothing more can be added")
        return ShardWriter(self, shard_name(len(self.manifest["shards"])), self.rows)

    def finish(self) -> None:
        """Mark the store complete."""
        self.manifest["complete"] = True
        write_manifest(self.filesystem, self.directory, self.manifest)

    def _add(self, record: ShardRecord) -> None:
        self.manifest["shards"].append(record.to_dict())
        self.manifest["rows"] = record.stop
        self.manifest["skipped_lines"] = int(self.manifest.get("skipped_lines", 0)) + record.skipped_lines
        write_manifest(self.filesystem, self.directory, self.manifest)

    def _drop_damaged_shards(self) -> None:
        """Check every finished shard's SHA-256; from the first missing or changed one on, the shards
        are dropped (with a warning naming it) so that the run encodes them again."""
        for position, record in enumerate(self.shards):
            path = posixpath.join(self.directory, record.file)
            try:
                intact = file_sha256(self.filesystem, path) == record.sha256
            except FileNotFoundError:
                intact = False
            if intact:
                continue
            logger.warning(
                "%s: missing or damaged (checksum mismatch); it and the %d shard(s) after it are encoded again",
                path,
                len(self.manifest["shards"]) - position - 1,
            )
            for later in self.manifest["shards"][position:]:
                later_path = posixpath.join(self.directory, later["file"])
                if self.filesystem.get_file_info(later_path).type != pafs.FileType.NotFound:
                    self.filesystem.delete_file(later_path)
            del self.manifest["shards"][position:]
            self.manifest["rows"] = record.start
            self.manifest["skipped_lines"] = sum(r.get("skipped_lines", 0) for r in self.manifest["shards"])
            self.manifest["complete"] = False
            write_manifest(self.filesystem, self.directory, self.manifest)
            return

    def _clean(self) -> None:
        """Remove what a killed run left: temporary files, and shard files the manifest does not list."""
        listed = {record["file"] for record in self.manifest["shards"]} | {MANIFEST}
        for info in self.filesystem.get_file_info(pafs.FileSelector(self.directory)):
            if info.base_name not in listed and _is_store_file(info.base_name):
                self.filesystem.delete_file(info.path)


class ShardWriter:
    """Writes one shard's rows (in one or more pieces) to a temporary file; on success it is moved
    into place, hashed and recorded in the manifest; on error the temporary file is removed."""

    def __init__(self, store: StoreWriter, name: str, start: int) -> None:
        self.store = store
        self.name = name
        self.start = start
        self.stop = start
        self.skipped_lines = 0
        self._digest = hashlib.sha256()
        self._tmp = posixpath.join(store.directory, f".{name}.tmp")
        manifest = store.manifest
        self._schema = store_schema(manifest["dtype"], manifest["dim"], manifest["texts"])
        self._writer: pq.ParquetWriter | None = None

    def write(self, ids: np.ndarray, texts: Sequence[str] | None, vectors: np.ndarray) -> None:
        """Append rows: ``ids`` ``(n,)`` int64, ``texts`` (n strings), ``vectors`` ``(n, dim)`` in the store dtype."""
        manifest = self.store.manifest
        dtype, dim = np.dtype(manifest["dtype"]), manifest["dim"]
        if vectors.dtype != dtype or vectors.shape != (len(ids), dim):
            raise StoreError(
                f"{self.name}: expected vectors of shape ({len(ids)}, {dim}) and dtype {dtype}, "
                f"got {vectors.shape} {vectors.dtype}"
            )
        update_input_digest(self._digest, ids, texts or [])
        columns: dict[str, pa.Array] = {"id": pa.array(np.asarray(ids, dtype=np.int64))}
        if manifest["texts"]:
            columns["text"] = pa.array(list(texts or []), type=pa.string())
        flat = pa.array(np.ascontiguousarray(vectors).reshape(-1))
        columns["embedding"] = pa.FixedSizeListArray.from_arrays(flat, dim)
        table = pa.table(columns, schema=self._schema)
        with _disk_full_guard(self):
            if self._writer is None:
                self._writer = pq.ParquetWriter(
                    self._tmp,
                    self._schema,
                    filesystem=self.store.filesystem,
                    compression={"id": "none", "text": "zstd", "embedding": "none"},
                    use_dictionary=False,
                    write_statistics=["id"],
                )
            self._writer.write_table(table, row_group_size=manifest["row_group_size"])
        self.stop += len(ids)

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        fs = self.store.filesystem
        try:
            if kind is None and self.stop > self.start:
                with _disk_full_guard(self):
                    assert self._writer is not None
                    self._writer.close()
                    self._writer = None
                    sha256 = file_sha256(fs, self._tmp)
                    fs.move(self._tmp, posixpath.join(self.store.directory, self.name))
                    self.store._add(
                        ShardRecord(
                            self.name,
                            self.start,
                            self.stop,
                            sha256,
                            self._digest.hexdigest(),
                            self.skipped_lines,
                        )
                    )
        finally:
            if self._writer is not None:
                self._writer.close()
            if fs.get_file_info(self._tmp).type != pafs.FileType.NotFound:
                fs.delete_file(self._tmp)


def file_sha256(filesystem: pafs.FileSystem, path: str) -> str:
    digest = hashlib.sha256()
    with filesystem.open_input_stream(path) as stream:
        while block := stream.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


class _disk_full_guard:
    """Turns "no space left on device" into a message that says the finished shards are safe."""

    def __init__(self, shard: ShardWriter) -> None:
        self.shard = shard

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: BaseException | None, trace: Any) -> None:
        if isinstance(error, OSError) and (error.errno == errno.ENOSPC or "No space left" in str(error)):
            store = self.shard.store
            raise StoreDiskFullError(
                errno.ENOSPC,
                f"disk full while writing {self.shard.name} in {store.directory}: the "
                f"{len(store.manifest['shards'])} finished shard(s) ({store.rows} rows) are intact; "
                "free some space and run the same command again to resume",
            ) from error


def existing_store(fs: pafs.FileSystem, directory: str) -> dict[str, Any] | None:
    """The manifest of the store at ``directory``; ``None`` when there is nothing (or an empty folder).

    Raises:
        StoreError: the path holds something other than a store (which is never touched).
    """
    info = fs.get_file_info(directory)
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type != pafs.FileType.Directory:
        raise StoreError(f"{directory} exists and is not a directory; refusing to write a store there")
    entries = fs.get_file_info(pafs.FileSelector(directory))
    names = sorted(entry.base_name for entry in entries)
    if MANIFEST not in names:
        if names:
            raise StoreError(
                f"{directory} is not empty and holds no sbert store ({', '.join(names[:3])}"
                f"{', ...' if len(names) > 3 else ''}); refusing to write there: choose another directory"
            )
        return None
    return read_manifest(fs, directory)


def _is_store_file(name: str) -> bool:
    return (name.startswith("shard-") and name.endswith(".parquet")) or (
        name.startswith(".") and name.endswith(".tmp")
    )


def _remove_store_files(fs: pafs.FileSystem, directory: str) -> None:
    """``overwrite``: remove the store's own files (shards, manifest, temporaries), nothing else."""
    for info in fs.get_file_info(pafs.FileSelector(directory)):
        if _is_store_file(info.base_name) or info.base_name == MANIFEST:
            fs.delete_file(info.path)
