"""Streaming a corpus into a store: read incrementally, encode chunk by chunk, write shard by shard.

Memory holds one chunk of texts and vectors at a time, whatever the corpus size. Chunks start at
fixed offsets from each shard's first row, so the sentences that share a chunk (and therefore the
smart batches inside it) are the same in an interrupted and resumed run as in an uninterrupted
one: resumed shards are byte-identical.
"""

from __future__ import annotations

import itertools
import logging
import posixpath
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pyarrow import fs as pafs
from tqdm.auto import tqdm

from sbert.base.outputs import claiming
from sbert.data.errors import BadLines
from sbert.data.texts import STDIN, fingerprint_input, iter_texts, resolve_format
from sbert.embeddings.identity import ModelIdentity, check_same_model, model_identity
from sbert.embeddings.quantization import QuantizationRanges, quantize_codes
from sbert.store.manifest import MANIFEST, STORE, STORE_DTYPES, StoreError
from sbert.store.reader import EmbeddingStore
from sbert.store.writer import ShardWriter, StoreWriter, input_digest

if TYPE_CHECKING:
    from sbert.encoder.model import SentenceEncoder

logger = logging.getLogger("sbert")

DEFAULT_SHARD_SIZE = 100_000  # rows a shard: about 150 MB of 384-d float32
DEFAULT_CHUNK_ROWS = 10_000  # rows encoded (and smart-batched) together
ENGINES = ("local", "ray")

# (ids (n,) int64, texts, vectors (n, dim) float32): what an engine hands the shard writer.
Chunk = tuple[np.ndarray, list[str], np.ndarray]


@dataclass(frozen=True)
class CorpusOptions:
    """How :func:`encode_corpus` reads, encodes and writes a corpus; checked when made.

    Attributes:
        fmt: Input format (see :func:`sbert.data.texts.iter_texts`).
        column: The text field.
        id_column: An optional integer id field; without it the id is the row number.
        shard_size: Rows per Parquet shard.
        chunk_rows: Rows encoded together; smart batching sorts by length inside each chunk.
        batch_size: As in :meth:`~sbert.SentenceEncoder.encode`.
        max_tokens: As in :meth:`~sbert.SentenceEncoder.encode`.
        normalize: Store unit-length vectors.
        dtype: ``float32``, ``float16`` or ``int8`` (per-dimension ranges calibrated on the first
            chunk, stored in the manifest and used for every shard).
        store_texts: Keep a ``text`` column (for lookups by id).
        skip_bad_lines: Skip malformed input lines (counted in the manifest) instead of stopping.
        overwrite: Start again over a store made with another input, model or settings.
        show_progress: Rows, rows/s and time left on stderr (default: on).
        engine: ``local`` or ``ray`` (Ray Data; ``address`` of a cluster, ``workers`` actors).
        address: The Ray cluster to join (default: a local one).
        workers: Ray actors (default: Ray's choice).
        filesystem: A pyarrow filesystem for ``output`` (default: from its URI).
        prompt_name: As in :meth:`~sbert.SentenceEncoder.encode` (default: the model's default prompt).
        prompt: As in :meth:`~sbert.SentenceEncoder.encode`. The text put before each sentence is
            recorded in the manifest, and a run with another prompt cannot continue the store.

    Raises:
        ValueError: an unknown engine or dtype, or a shard or chunk size below 1.

    Examples:
        >>> CorpusOptions(dtype="int8", shard_size=50_000).chunk_rows
        10000
        >>> CorpusOptions(dtype="int4")
        Traceback (most recent call last):
        ...
        ValueError: unknown store dtype 'int4'; choose one of float32, float16, int8
    """

    fmt: str = "auto"
    column: str = "text"
    id_column: str | None = None
    shard_size: int = DEFAULT_SHARD_SIZE
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    batch_size: int = 32
    max_tokens: int | None = None
    normalize: bool = False
    dtype: str = "float32"
    store_texts: bool = True
    skip_bad_lines: bool = False
    overwrite: bool = False
    show_progress: bool | None = None
    engine: str = "local"
    address: str | None = None
    workers: int | None = None
    filesystem: pafs.FileSystem | None = None
    prompt_name: str | None = None
    prompt: str | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown engine {self.engine!r}; choose one of {', '.join(ENGINES)}")
        if self.dtype not in STORE_DTYPES:
            raise ValueError(f"unknown store dtype {self.dtype!r}; choose one of {', '.join(STORE_DTYPES)}")
        for name, value in (("shard_size", self.shard_size), ("chunk_rows", self.chunk_rows)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")


@claiming("output", STORE)
def encode_corpus(
    model: SentenceEncoder,
    source: str | Path | Iterable[str],
    output: str | Path,
    options: CorpusOptions | None = None,
) -> EmbeddingStore:
    """Encode every sentence of ``source`` into the embedding store at ``output``, resumably.

    Running it again after a crash continues at the first unfinished shard; a store made with
    another input, model or settings is refused (``overwrite=True`` starts again).

    Args:
        model: A :class:`~sbert.SentenceEncoder`; its precision is the inference precision.
        source: A file (text lines, JSONL, CSV/TSV, Parquet), a URI pyarrow opens, ``"-"`` for
            standard input, or (local engine) an iterable of strings.
        output: The store directory (local or a pyarrow URI).
        options: Format, shards, dtype, engine... (default: :class:`CorpusOptions`'s).

    Returns:
        The finished store.

    Not run by the tests: it shows a 1,000,000-line corpus and a ``model`` of yours
    (docs/guides/corpus-stores.md runs ``encode_corpus`` end to end).

    Examples:
        >>> store = encode_corpus(model, "corpus.txt", "vectors/", CorpusOptions(dtype="int8"))  # doctest: +SKIP
        >>> len(store), store.dtype                                                             # doctest: +SKIP
        (1000000, 'int8')
    """
    options = options or CorpusOptions()
    from_file = isinstance(source, (str, Path))
    if options.engine == "ray" and not from_file:
        raise ValueError("the ray engine reads a file or URI, not an in-memory iterable")
    if options.engine == "ray" and (options.skip_bad_lines or str(source) == STDIN):
        raise ValueError("the ray engine reads files with Ray's own readers: no stdin, no --skip-bad-lines")
    chunk_rows = min(options.chunk_rows, options.shard_size)
    settings = _settings(model, source, options, chunk_rows)
    settings["texts"] = options.store_texts
    settings["prompt"] = model.prompts.resolve(
        options.prompt_name, options.prompt
    )  # the text, which Ray workers get too
    writer = StoreWriter.open(
        str(output), settings, overwrite=options.overwrite, filesystem=options.filesystem
    )
    check_same_model(
        ModelIdentity.from_dict(writer.manifest["model"]), model, posixpath.join(writer.directory, MANIFEST)
    )
    if writer.complete:
        logger.info("%s: the store is already complete (%d rows)", writer.directory, writer.rows)
        return EmbeddingStore.open(writer.directory, filesystem=writer.filesystem)
    if writer.rows:
        logger.info(
            "%s: resuming after %d rows in %d shards", writer.directory, writer.rows, len(writer.shards)
        )
    estimate = settings["input"].get("lines")
    progress = tqdm(
        total=estimate,
        initial=writer.rows,
        unit=" rows",
        desc="Encoding",
        disable=options.show_progress is False,
    )
    encode = {
        "batch_size": options.batch_size,
        "max_tokens": options.max_tokens,
        "normalize": options.normalize,
        "prompt": settings["prompt"],
    }
    with progress:
        if options.engine == "ray":
            from sbert.store.ray_engine import ray_chunks

            chunks = ray_chunks(
                model, str(source), writer, encode, address=options.address, workers=options.workers
            )
            write_shards(writer, chunks, progress)
        else:
            bad = BadLines("<stdin>" if str(source) == STDIN else str(source), skip=options.skip_bad_lines)
            with bad:
                rows = _rows(source, settings, bad) if from_file else _iterable_rows(source)  # type: ignore[arg-type]
                _skip_finished(rows, writer)
                chunks = _encoded_chunks(model, rows, writer.rows, options.shard_size, chunk_rows, encode)
                write_shards(writer, chunks, progress, skipped=lambda: bad.count)
    writer.finish()
    return EmbeddingStore.open(writer.directory, filesystem=writer.filesystem)


def write_shards(
    writer: StoreWriter, chunks: Iterable[Chunk], progress: Any, skipped: Any = lambda: 0
) -> None:
    """Write float32 chunks as shards of ``shard_size`` rows (split at shard boundaries), quantized
    to the store dtype; int8 ranges are calibrated on the first chunk unless the manifest has them."""
    manifest = writer.manifest
    shard_size = int(manifest["shard_size"])
    ranges = manifest.get("quantization_ranges")
    fingerprint = manifest["model"]["fingerprint"]
    with ExitStack() as stack:
        shard: ShardWriter | None = None
        skipped_before = skipped()
        for ids, texts, vectors in _split_at_shards(chunks, writer.rows, shard_size):
            if manifest["dtype"] == "int8" and ranges is None:
                sample = vectors if len(vectors) > 1 else np.concatenate([vectors, vectors])
                ranges = QuantizationRanges.from_vectors(sample, fingerprint).to_dict()
                writer.set_field("quantization_ranges", ranges)
            parsed = QuantizationRanges.from_dict(ranges) if ranges is not None else None
            if shard is None:
                shard = stack.enter_context(writer.shard())
            shard.write(ids, texts, quantize_codes(vectors, manifest["dtype"], parsed))
            progress.update(len(ids))
            if shard.stop - shard.start == shard_size:
                shard.skipped_lines = skipped() - skipped_before
                skipped_before = skipped()
                stack.close()  # moves the shard into place and records it
                shard = None
        if shard is not None:
            shard.skipped_lines = skipped() - skipped_before


def _split_at_shards(chunks: Iterable[Chunk], first_row: int, shard_size: int) -> Iterator[Chunk]:
    row = first_row
    for ids, texts, vectors in chunks:
        start = 0
        while start < len(ids):
            take = min(len(ids) - start, shard_size - row % shard_size)
            part = slice(start, start + take)
            yield ids[part], texts[part], vectors[part]
            start += take
            row += take


def _settings(
    model: SentenceEncoder, source: str | Path | Iterable[str], options: CorpusOptions, chunk_rows: int
) -> dict[str, Any]:
    identity = model_identity(model)
    plan = model.plan  # what runs, so the manifest cannot record a precision that did not
    description: dict[str, Any] = {"format": None, "column": options.column, "size": None, "sha256": None}
    where = "<iterable>"
    if isinstance(source, (str, Path)):
        description["format"] = resolve_format(source, options.fmt)
        fingerprint = fingerprint_input(source)
        if fingerprint is not None:
            description.update(size=fingerprint.size, sha256=fingerprint.sha256, lines=fingerprint.lines)
            where = str(source) if "://" in str(source) else str(Path(source).resolve())
        else:
            where = "<stdin>"
    return {
        "input": description,
        "input_source": where,
        "model": identity.to_dict(),
        "dim": int(model.dim),
        "precision": plan.precision,
        "engine": plan.to_dict(),
        "dtype": options.dtype,
        "normalized": bool(options.normalize or "Normalize" in identity.pipeline.get("layers", [])),
        "shard_size": options.shard_size,
        "chunk_rows": chunk_rows,
        "id_column": options.id_column,
    }


def _rows(source: str | Path, settings: dict[str, Any], bad: BadLines) -> Iterator[tuple[int | None, str]]:
    described = settings["input"]
    rows = iter_texts(source, described["format"], described["column"], settings["id_column"], bad=bad)
    return ((row_id, text) for _, row_id, text in rows)


def _iterable_rows(texts: Iterable[str]) -> Iterator[tuple[int | None, str]]:
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"sentences[{index}] is {type(text).__name__}, expected str")
        yield None, text


def _skip_finished(rows: Iterator[tuple[int | None, str]], writer: StoreWriter) -> None:
    """Read past the rows of finished shards, checking they are the rows that made each shard."""
    for shard in writer.shards:
        taken = list(itertools.islice(rows, shard.rows))
        ids = np.array([shard.start + i if row_id is None else row_id for i, (row_id, _) in enumerate(taken)])
        digest = input_digest(ids.astype(np.int64), [text for _, text in taken]).hexdigest()
        if len(taken) < shard.rows or digest != shard.input_sha256:
            raise StoreError(
                f"{writer.directory}: the input differs from the one that made {shard.file} (rows "
                f"{shard.start}-{shard.stop - 1}); use the same input to resume, or --overwrite to start again"
            )


def _encoded_chunks(
    model: SentenceEncoder,
    rows: Iterator[tuple[int | None, str]],
    first_row: int,
    shard_size: int,
    chunk_rows: int,
    encode: dict[str, Any],
) -> Iterator[Chunk]:
    """Chunks of at most ``chunk_rows`` that restart at every shard boundary (see the module doc)."""
    row = first_row
    while True:
        size = min(chunk_rows, shard_size - row % shard_size)
        taken = list(itertools.islice(rows, size))
        if not taken:
            return
        texts = [text for _, text in taken]
        ids = np.array(
            [row + i if row_id is None else row_id for i, (row_id, _) in enumerate(taken)], dtype=np.int64
        )
        vectors = model.encode(texts, show_progress_bar=False, **encode)  # (n, dim) float32
        yield ids, texts, np.asarray(vectors, dtype=np.float32)
        row += len(taken)
