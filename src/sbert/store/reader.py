"""Reading a store: chunked iteration, random access by row, text lookup by id, checksum verification.

Shards are Parquet files with small row groups (256 rows by default), opened memory-mapped, so a
lookup of a few rows reads a few small row groups, never a whole shard.

Every shard's SHA-256 is checked against the manifest the first time an open store reads it
(``verify=False`` skips this), so a damaged shard is an error naming it, never a wrong vector. The
check reads the shard once: about 0.1 s for a shard of 100,000 384-d float32 rows.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sbert.embeddings.identity import ModelIdentity
from sbert.embeddings.quantization import QuantizationRanges
from sbert.store.manifest import ShardRecord, StoreError, read_manifest, resolve_location
from sbert.store.writer import file_sha256

_CACHED_ROW_GROUPS = 64  # decoded row groups kept for repeated lookups (about 25 MB at 384-d float32)


@dataclass(frozen=True)
class StoreBatch:
    """Consecutive rows ``start`` to ``start + len(ids)`` of a store.

    Attributes:
        start: Row number of the first row.
        ids: ``(n,)`` int64.
        vectors: ``(n, dim)`` in the store's dtype.
    """

    start: int
    ids: np.ndarray
    vectors: np.ndarray


class EmbeddingStore:
    """A finished embedding store, read without loading it whole.

    Not run by the tests: it shows a 1,000,000-row store and an ``index`` of yours
    (docs/guides/corpus-stores.md runs a store end to end).

    Examples:
        >>> store = EmbeddingStore.open("vectors/")                   # doctest: +SKIP
        >>> len(store), store.dim, store.dtype                        # doctest: +SKIP
        (1000000, 384, 'float32')
        >>> for batch in store.iter_batches(65536):                    # doctest: +SKIP
        ...     index.add(batch.vectors)
        >>> store.texts([17, 42])                                     # doctest: +SKIP
        ['A man is playing a guitar.', 'A dog runs in the park.']
    """

    def __init__(self, filesystem: pafs.FileSystem, directory: str, manifest: dict[str, Any]) -> None:
        self.filesystem = filesystem
        self.directory = directory
        self.manifest = manifest
        self.shards = [ShardRecord(**record) for record in manifest["shards"]]
        self._starts = np.array([shard.start for shard in self.shards], dtype=np.int64)
        self._files: OrderedDict[int, pq.ParquetFile] = OrderedDict()
        self._groups: OrderedDict[tuple[int, int, str], pa.Array] = OrderedDict()
        self._row_group_starts: dict[int, np.ndarray] = {}
        self._id_order: tuple[np.ndarray, np.ndarray] | None = None  # (sorted ids, their rows)
        self._verify = True
        self._verified: set[int] = set()  # shards whose checksum was checked by this open store

    @classmethod
    def open(
        cls,
        path: str,
        filesystem: pafs.FileSystem | None = None,
        allow_incomplete: bool = False,
        verify: bool = True,
    ) -> EmbeddingStore:
        """Open the store at ``path`` (a local directory or a URI pyarrow understands).

        Args:
            path: The store directory or URI.
            filesystem: A pyarrow filesystem to read ``path`` with (default: from the path).
            allow_incomplete: Read the finished shards of an unfinished store.
            verify: Check each shard's SHA-256 against the manifest the first time it is read
                (once per open store); ``False`` trusts the files as they are.

        Raises:
            StoreError: no manifest, a corrupt one (the message names the file), or an unfinished
                store (unless ``allow_incomplete``: then the finished shards are read). Reading a
                shard whose bytes changed raises ``StoreError`` naming the shard.
        """
        fs, directory = resolve_location(path, filesystem)
        manifest = read_manifest(fs, directory)
        if not manifest["complete"] and not allow_incomplete:
            raise StoreError(
                f"{directory}: the store is unfinished ({manifest['rows']} rows in "
                f"{len(manifest['shards'])} shards); run the same encode command again to resume it"
            )
        store = cls(fs, directory, manifest)
        store._verify = verify
        return store

    @property
    def digest(self) -> str:
        """SHA-256 over the rows and every shard's SHA-256: equal for stores with the same bytes.

        An index built from a store records it, and refuses the store once it changes.
        """
        digest = hashlib.sha256(str(len(self)).encode())
        for shard in self.shards:
            digest.update(f"\n{shard.file} {shard.start} {shard.stop} {shard.sha256}".encode())
        return digest.hexdigest()

    def __len__(self) -> int:
        return int(self.manifest["rows"])

    def __repr__(self) -> str:
        return f"EmbeddingStore({self.directory!r}, rows={len(self)}, dim={self.dim}, dtype={self.dtype!r})"

    @property
    def dim(self) -> int:
        return int(self.manifest["dim"])

    @property
    def dtype(self) -> str:
        """``"float32"``, ``"float16"`` or ``"int8"`` (codes: see :attr:`quantization_ranges`)."""
        return str(self.manifest["dtype"])

    @property
    def normalized(self) -> bool:
        return bool(self.manifest["normalized"])

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity.from_dict(self.manifest["model"], where=self._where)

    @property
    def quantization_ranges(self) -> QuantizationRanges | None:
        ranges = self.manifest.get("quantization_ranges")
        return None if ranges is None else QuantizationRanges.from_dict(ranges, where=self._where)

    @property
    def has_texts(self) -> bool:
        return bool(self.manifest.get("texts", True))

    def iter_batches(self, batch_rows: int = 65536) -> Iterator[StoreBatch]:
        """Every row in order, at most ``batch_rows`` at a time (batches do not cross shards)."""
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be at least 1, got {batch_rows}")
        for index, shard in enumerate(self.shards):
            start = shard.start
            batches = self._file(index).iter_batches(batch_size=batch_rows, columns=["id", "embedding"])
            while True:
                with self.reading_shard(index):  # not around the yield: the caller's errors are its own
                    batch = next(batches, None)
                if batch is None:
                    break
                ids = batch.column(0).to_numpy()
                yield StoreBatch(start, ids, self._matrix(batch.column(1)))
                start += len(ids)

    def vectors(self, rows: np.ndarray | Sequence[int]) -> np.ndarray:
        """``(len(rows), dim)`` vectors of the given row numbers, in the order given."""
        return self._take(rows, "embedding", self._matrix, np.zeros((0, self.dim), dtype=self.dtype))

    def ids(self, rows: np.ndarray | Sequence[int]) -> np.ndarray:
        """``(len(rows),)`` int64 ids of the given row numbers."""
        return self._take(rows, "id", lambda column: column.to_numpy(), np.zeros(0, dtype=np.int64))

    def rows_of(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """The row number of each id; ``KeyError`` names an id the store does not hold."""
        wanted = np.asarray(ids, dtype=np.int64).reshape(-1)
        if self.manifest.get("id_column") is None:  # ids are row numbers
            bad = wanted[(wanted < 0) | (wanted >= len(self))]
            if len(bad):
                raise KeyError(f"{self._where}: no row with id {int(bad[0])} (ids are 0..{len(self) - 1})")
            return wanted
        sorted_ids, rows = self._id_index()
        where = np.clip(np.searchsorted(sorted_ids, wanted), 0, max(len(sorted_ids) - 1, 0))
        missing = (
            (len(sorted_ids) == 0) | (sorted_ids[where] != wanted) if len(wanted) else np.array([], bool)
        )
        if np.any(missing):
            raise KeyError(f"{self._where}: no row with id {int(wanted[np.argmax(missing)])}")
        return rows[where]

    def texts(self, ids: np.ndarray | Sequence[int]) -> list[str | None]:
        """The text of each id (``None`` for every id when the store was written without texts)."""
        rows = self.rows_of(ids)
        if not self.has_texts:
            return [None] * len(rows)
        as_objects = lambda column: np.asarray(column.to_pylist(), dtype=object)  # noqa: E731
        return list(self._take(rows, "text", as_objects, np.zeros(0, dtype=object)))

    def verify(self) -> None:
        """Check every shard's SHA-256 against the manifest.

        Raises:
            StoreError: a shard is missing or its bytes changed; the message names the shard.
        """
        for index in range(len(self.shards)):
            self._verify_shard(index)

    def checked_shard(self, index: int) -> str:
        """The path of shard ``index``, its checksum checked first (once per open store, unless
        opened with ``verify=False``); for readers that stream a shard themselves."""
        if self._verify and index not in self._verified:
            self._verify_shard(index)
        return posixpath.join(self.directory, self.shards[index].file)

    def _verify_shard(self, index: int) -> None:
        shard = self.shards[index]
        path = posixpath.join(self.directory, shard.file)
        try:
            actual = file_sha256(self.filesystem, path)
        except FileNotFoundError:
            raise StoreError(f"{path}: shard missing from the store") from None
        if actual != shard.sha256:
            raise StoreError(
                f"{path}: checksum mismatch (SHA-256 {actual[:16]}…, manifest {shard.sha256[:16]}…): "
                "the shard was changed or damaged; encode the store again (or open it with "
                "verify=False to read it as it is)"
            )
        self._verified.add(index)

    @contextmanager
    def reading_shard(self, index: int) -> Iterator[None]:
        """Arrow's errors say what went wrong, not in which file: add the shard's path."""
        try:
            yield
        except (pa.ArrowException, OSError) as error:
            path = posixpath.join(self.directory, self.shards[index].file)
            raise StoreError(f"{path}: cannot read the shard ({error})") from error

    @property
    def _where(self) -> str:
        return posixpath.join(self.directory, "manifest.json")

    def _matrix(self, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        values = column.flatten().to_numpy(zero_copy_only=False)  # flatten() honours a slice's offset
        # A writable array: callers normalise in place (faiss.normalize_L2) without a surprise.
        matrix = values.reshape(len(column), self.dim)
        return matrix if matrix.flags.writeable else matrix.copy()

    def _file(self, index: int) -> pq.ParquetFile:
        handle = self._files.get(index)
        if handle is None:
            path = self.checked_shard(index)
            with self.reading_shard(index):
                if isinstance(self.filesystem, pafs.LocalFileSystem):
                    handle = pq.ParquetFile(path, memory_map=True)
                else:
                    handle = pq.ParquetFile(self.filesystem.open_input_file(path))
            self._files[index] = handle
            if len(self._files) > 256:
                self._files.popitem(last=False)
        return handle

    def _take(
        self, rows: np.ndarray | Sequence[int], column: str, convert: Any, empty: np.ndarray
    ) -> np.ndarray:
        """``column`` of ``rows`` in the order given, reading each needed row group once."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if not len(rows):
            return empty
        if rows.min() < 0 or rows.max() >= len(self):
            bad = rows[(rows < 0) | (rows >= len(self))][0]
            raise IndexError(f"{self._where}: row {int(bad)} is outside 0..{len(self) - 1}")
        shard_of = np.searchsorted(self._starts, rows, side="right") - 1
        local = rows - self._starts[shard_of]
        group_of = np.zeros_like(rows)
        group_start = np.zeros_like(rows)
        for shard in np.unique(shard_of):
            mine = shard_of == shard
            starts = self._group_starts(int(shard))
            group_of[mine] = np.searchsorted(starts, local[mine], side="right") - 1
            group_start[mine] = starts[group_of[mine]]
        parts: list[np.ndarray] = []
        positions: list[np.ndarray] = []
        for key in np.unique(np.stack([shard_of, group_of], axis=1), axis=0):
            shard, group = int(key[0]), int(key[1])
            chosen = np.flatnonzero((shard_of == shard) & (group_of == group))
            offsets = local[chosen] - group_start[chosen]
            values = convert(self._group(shard, group, column))
            parts.append(values[offsets])
            positions.append(chosen)
        order = np.argsort(np.concatenate(positions), kind="stable")
        return np.concatenate(parts)[order]

    def _group_starts(self, shard: int) -> np.ndarray:
        """First row (within the shard) of each row group, from the Parquet footer."""
        starts = self._row_group_starts.get(shard)
        if starts is None:
            metadata = self._file(shard).metadata
            sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
            self._row_group_starts[shard] = starts
        return starts

    def _group(self, shard: int, group: int, column: str) -> pa.Array:
        key = (shard, group, column)
        cached = self._groups.get(key)
        if cached is None:
            handle = self._file(shard)
            with self.reading_shard(shard):
                cached = handle.read_row_group(group, columns=[column]).column(0)
            self._groups[key] = cached
            if len(self._groups) > _CACHED_ROW_GROUPS:
                self._groups.popitem(last=False)
        else:
            self._groups.move_to_end(key)
        return cached

    def _id_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted ids and their rows, read once from the id column (8 bytes a row)."""
        if self._id_order is None:
            parts = [np.zeros(0, dtype=np.int64)]
            for index in range(len(self.shards)):
                handle = self._file(index)
                with self.reading_shard(index):
                    parts.append(handle.read(columns=["id"]).column(0).to_numpy())
            ids = np.concatenate(parts)
            order = np.argsort(ids, kind="stable")
            self._id_order = (ids[order], order.astype(np.int64))
        return self._id_order
