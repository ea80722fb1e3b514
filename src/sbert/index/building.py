"""Building an index from vectors on disk (an embedding store) in bounded memory.

The corpus is never held whole: the index trains on a sample, then vectors are added shard by
shard while their ids and rescoring codes are written straight into the new index directory's
memory-mapped files. Texts stay in the store and are looked up by id when a search returns.
Everything is written into a temporary directory that replaces the target only when complete.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> vectors = np.random.default_rng(0).normal(size=(1000, 16)).astype("float32")
    >>> source = ArraySource(vectors)
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "idx"
    >>> build_index(source, out, kind="binary").kind
    'binary'
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from sbert.base.files import staging_dir
from sbert.base.outputs import claiming
from sbert.embeddings.quantization import QuantizationRanges, dequantize_embeddings
from sbert.embeddings.truncation import check_dimensions, truncate_embeddings
from sbert.index import files
from sbert.index.files import IDS_FILE, RESCORE_FILE
from sbert.index.kinds import choose_kind
from sbert.index.options import IndexOptions
from sbert.index.rescoring import RescoreWriter
from sbert.index.vector_index import VectorIndex

TRAIN_SAMPLE = 160_000  # vectors IVF and PQ train on (39 per list at FAISS's 4096), drawn at random
CALIBRATION_SAMPLE = 20_000  # vectors that fix the int8 rescoring ranges


class VectorSource(Protocol):
    """What :func:`build_index` reads: a count, a dimension, batches in order and rows by position."""

    def __len__(self) -> int: ...

    @property
    def dim(self) -> int: ...

    def batches(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(ids (n,) int64, vectors (n, dim) float32)`` in order."""
        ...

    def sample(self, positions: np.ndarray) -> np.ndarray:
        """Float32 vectors (len(positions), dim) at sorted positions."""
        ...


class ArraySource:
    """A matrix (or a ``.npy`` memory map) as a :class:`VectorSource`; ids 0..n-1 unless given."""

    def __init__(self, vectors: np.ndarray, ids: np.ndarray | None = None) -> None:
        self.array, self.ids = vectors, ids

    def __len__(self) -> int:
        return len(self.array)

    @property
    def dim(self) -> int:
        return int(self.array.shape[1])

    def batches(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, len(self.array), rows):
            block = np.asarray(self.array[start : start + rows], dtype=np.float32)
            ids = np.arange(start, start + len(block)) if self.ids is None else self.ids[start : start + rows]
            yield np.asarray(ids, dtype=np.int64), block

    def sample(self, positions: np.ndarray) -> np.ndarray:
        return np.asarray(self.array[positions], dtype=np.float32)


class StoreSource:
    """An :class:`sbert.store.EmbeddingStore` as a :class:`VectorSource` (int8 rows dequantized).

    The shards are streamed with ordinary reads, not through the store's memory-mapped files: every
    page of a memory map read once stays in the process's resident memory, so a pass over a 1M-vector
    float32 store would count 1.5 GB against the build. The training sample is gathered during one
    such pass (sorted positions), not by random access.
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    def __len__(self) -> int:
        return len(self.store)

    @property
    def dim(self) -> int:
        return int(self.store.dim)

    def _floats(self, vectors: np.ndarray) -> np.ndarray:
        if self.store.dtype == "int8":
            return dequantize_embeddings(vectors, "int8", self.store.quantization_ranges)
        return np.asarray(vectors, dtype=np.float32)

    def batches(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        import pyarrow.parquet as pq

        for index in range(len(self.store.shards)):
            path = self.store.checked_shard(index)  # a damaged shard is refused, never indexed
            with self.store.filesystem.open_input_file(path) as handle:
                with self.store.reading_shard(index):
                    # No pre-buffering, small reads: pyarrow otherwise holds about 330 MB per shard (measured).
                    parquet = pq.ParquetFile(handle, pre_buffer=False, buffer_size=1 << 20)
                    batches = parquet.iter_batches(batch_size=min(rows, 16_384), columns=["id", "embedding"])
                while True:
                    with self.store.reading_shard(index):  # not around the yield (see iter_batches)
                        batch = next(batches, None)
                    if batch is None:
                        break
                    flat = batch.column(1).flatten().to_numpy(zero_copy_only=False)
                    yield batch.column(0).to_numpy(), self._floats(flat.reshape(len(batch), self.dim))

    def sample(self, positions: np.ndarray) -> np.ndarray:
        out = np.empty((len(positions), self.dim), dtype=np.float32)  # filled in place: no second copy
        filled = start = 0
        for _, vectors in self.batches(65_536):
            inside = positions[(positions >= start) & (positions < start + len(vectors))]
            out[filled : filled + len(inside)] = vectors[inside - start]
            filled += len(inside)
            start += len(vectors)
        return out


class TruncatedSource:
    """Another source's vectors cut to their first ``dimensions``, unit length again (a Matryoshka prefix)."""

    def __init__(self, source: VectorSource, dimensions: int) -> None:
        check_dimensions(dimensions, source.dim, "the source vectors'")
        self.source, self.dimensions = source, dimensions

    def __len__(self) -> int:
        return len(self.source)

    @property
    def dim(self) -> int:
        return self.dimensions

    def batches(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for ids, vectors in self.source.batches(rows):
            yield ids, truncate_embeddings(vectors, self.dimensions)

    def sample(self, positions: np.ndarray) -> np.ndarray:
        return truncate_embeddings(self.source.sample(positions), self.dimensions)


@claiming("output", files.INDEX)
def build_index(
    source: VectorSource,
    output: str | Path,
    *,
    options: IndexOptions | None = None,
    store_path: str | Path | None = None,
    batch_rows: int = 65_536,
    **settings: Any,
) -> VectorIndex:
    """Build and save an index of every vector of ``source`` at ``output``, in bounded memory.

    Memory holds the FAISS index being built, one batch and the training sample (at most
    :data:`TRAIN_SAMPLE` vectors); ids and rescoring codes go straight to memory-mapped files.

    Args:
        source: The vectors (:class:`ArraySource`, :class:`StoreSource`).
        output: The index directory; replaced atomically once the new one is complete.
        options: How it is built (:class:`~sbert.index.options.IndexOptions`: kind, metric, params,
            identity, rescore, max_memory, show_progress_bar, dimensions), as for
            :meth:`VectorIndex.build`; each may also be given by keyword, which wins.
        store_path: The store the texts are looked up in (recorded as an absolute path).
        batch_rows: Vectors added per step.

    Returns:
        The saved index, loaded back from ``output``.
    """
    options = IndexOptions.of(options, settings)
    kind, metric, identity, dimensions = options.kind, options.metric, options.identity, options.dimensions
    store = source.store if isinstance(source, StoreSource) else None
    full = source.dim
    if dimensions is not None and dimensions != full:
        source = TruncatedSource(source, dimensions)
    count, dim, output = len(source), source.dim, Path(output)
    if count == 0:
        raise ValueError("the source holds no vectors: there is nothing to index")
    choice = choose_kind(count, dim, options.max_memory) if kind == "auto" else None
    index = VectorIndex(
        dim, choice.kind if choice else kind, metric, None, options.params, identity, options.rescore, count
    )
    index.texts, index.store_path = None, str(Path(store_path).resolve()) if store_path else None
    index.truncated_from = full if dim < full else None
    if store is not None:
        index.document_prompt = store.manifest.get("prompt")
        index.store_digest = store.digest
    rng = np.random.default_rng(0)
    sample = source.sample(np.sort(rng.choice(count, min(count, TRAIN_SAMPLE), replace=False)))
    if metric == "cosine":  # in place: the sample is the largest thing a build holds
        sample /= np.maximum(np.linalg.norm(sample, axis=1, keepdims=True), 1e-12)
    index.train(sample)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_dir(output)
    try:
        ids = np.lib.format.open_memmap(staging / IDS_FILE, mode="w+", dtype=np.int64, shape=(count,))
        writer = None
        if index.rescore_precision is not None:
            ranges = (
                QuantizationRanges.from_vectors(
                    sample[:CALIBRATION_SAMPLE], identity.fingerprint if identity else None
                )
                if index.rescore_precision == "int8"
                else None
            )
            writer = RescoreWriter(staging / RESCORE_FILE, index.rescore_precision, count, dim, ranges)
        del sample
        filled = 0
        with tqdm(
            total=count, desc=f"Indexing ({index.kind})", unit="vec", disable=not options.show_progress_bar
        ) as bar:
            for batch_ids, vectors in source.batches(batch_rows):
                prepared = index._prepare(vectors)
                index.add_prepared(prepared)
                ids[filled : filled + len(batch_ids)] = batch_ids
                if writer is not None:
                    writer.write(prepared)
                filled += len(batch_ids)
                bar.update(len(batch_ids))
        if filled != count:
            raise ValueError(f"the source announced {count} vectors but gave {filled}")
        ids.flush()
        del ids
        fields = index.manifest()
        if writer is not None:
            fields["rescore_ranges"] = writer.ranges.to_dict() if writer.ranges is not None else None
            writer.close()
        files.commit(staging, output, index.faiss_index, fields)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    del index
    loaded = VectorIndex.load(output)
    loaded.choice = choice.reason if choice else None
    return loaded
