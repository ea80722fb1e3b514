"""The Ray Data engine: Ray reads the input, a pool of actors (each loading the model once) encodes
batches, and the driver writes the same shards and manifest as the local engine, in input order.

Each actor loads the model by the name or path it was loaded with here and checks its fingerprint,
so a worker that finds another model under that name (or none) stops the run instead of mixing
vectors. On a cluster the model path and the input must be reachable from every node (shared
storage, a URI pyarrow opens, or the bundled model installed with sbert).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.identity import model_identity
from sbert.store.writer import StoreWriter

if TYPE_CHECKING:
    from sbert.encoder import SentenceEncoder

_READ_CPUS = 0.25  # reading and splitting lines is light next to encoding


class EncoderActor:
    """One Ray actor: loads the model once, then embeds batches of texts.

    Not run by the tests here: tests/store/test_ray_engine.py runs the actor.

    Examples:
        >>> actor = EncoderActor({"name_or_path": None, "precision": "float32"}, "", {}, 2)  # doctest: +SKIP
        >>> actor({"text": np.array(["a dog"])})["embedding"].shape                     # doctest: +SKIP
        (1, 384)
    """

    def __init__(
        self,
        load: dict[str, Any],
        fingerprint: str,
        encode: dict[str, Any],
        threads: int,
        columns: tuple[str, str | None] = ("text", None),
    ) -> None:
        import torch

        from sbert import SentenceEncoder
        from sbert.identity import ModelMismatchError

        torch.set_num_threads(threads)
        self.model = SentenceEncoder.from_pretrained(device="cpu", **load)
        found = model_identity(self.model).fingerprint
        if fingerprint and found != fingerprint:
            raise ModelMismatchError(
                f"a Ray worker loaded {load['name_or_path']!r} and found other weights or another pipeline "
                f"(fingerprint {found[:12]}…, expected {fingerprint[:12]}…); make the same model reachable "
                "from every node, or save an in-memory model to a shared directory first"
            )
        self.encode = encode
        self.column, self.id_column = columns

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(text).rstrip("\r") for text in batch[self.column]]  # read_text keeps a CRLF's \r
        vectors = self.model.encode(texts, show_progress_bar=False, **self.encode)  # (n, dim) float32
        out = {"text": np.array(texts, dtype=object), "embedding": np.asarray(vectors, dtype=np.float32)}
        if self.id_column is not None:
            out["id"] = np.asarray(batch[self.id_column])
        return out


def ray_chunks(
    model: SentenceEncoder,
    source: str,
    writer: StoreWriter,
    encode: dict[str, Any],
    address: str | None = None,
    workers: int | None = None,
) -> Iterator[tuple[np.ndarray, list[str], np.ndarray]]:
    """``(ids, texts, vectors)`` chunks of the rows after the store's finished ones, in input order."""
    try:
        import ray
    except ImportError:
        raise ImportError("--engine ray needs Ray Data: pip install 'sbert[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address or os.environ.get("RAY_ADDRESS"), log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # row order = input order, so ids stay row numbers
    manifest = writer.manifest
    chunk_rows = int(manifest["chunk_rows"])
    fmt, column, id_column = manifest["input"]["format"], manifest["input"]["column"], manifest["id_column"]
    if "://" not in source:
        source = os.path.abspath(source)  # Ray's workers do not share the driver's working directory
    dataset = read_dataset(source, fmt, "text" if fmt == "txt" else column, id_column)
    if writer.rows:
        dataset = dataset.split_at_indices([writer.rows])[1]  # resume: past the finished shards
    cpus = float(ray.cluster_resources().get("CPU", 1))
    workers = workers or max(1, int(cpus))
    load = {
        "name_or_path": model.name,
        "pooling": model.pooling.mode,
        "max_seq_length": model.max_seq_length,
        "precision": model.requested_precision,
        "backend": model.requested_backend,
        "calibration_sentences": model.calibration_sentences,
    }
    encoded = dataset.map_batches(
        EncoderActor,
        fn_constructor_kwargs={
            "load": load,
            "fingerprint": model_identity(model).fingerprint,
            "encode": encode,
            "threads": max(1, round(cpus / workers)),
            "columns": ("text" if fmt == "txt" else column, id_column),
        },
        batch_size=chunk_rows,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=workers),
        # Actors leave a sliver of CPU for Ray's read tasks: taking every CPU deadlocks the pipeline.
        num_cpus=max(0.1, (cpus - _READ_CPUS * 2) / workers),
    )
    row = writer.rows
    for batch in encoded.iter_batches(batch_size=chunk_rows, batch_format="numpy"):
        texts = [str(text) for text in batch["text"]]
        if "id" in batch:
            ids = np.asarray(batch["id"], dtype=np.int64)
        else:
            ids = np.arange(row, row + len(texts), dtype=np.int64)
        row += len(texts)
        yield ids, texts, np.asarray(batch["embedding"], dtype=np.float32).reshape(len(texts), -1)


def read_dataset(source: str, fmt: str, column: str, id_column: str | None) -> Any:
    """A Ray dataset of ``source`` (a ``text`` column for text files)."""
    import ray

    if fmt == "txt":
        return ray.data.read_text(source, drop_empty_lines=False, num_cpus=_READ_CPUS)
    if fmt == "parquet":
        columns = [column] + ([id_column] if id_column else [])
        return ray.data.read_parquet(source, columns=columns, num_cpus=_READ_CPUS)
    if fmt == "jsonl":
        return ray.data.read_json(source, lines=True, num_cpus=_READ_CPUS)
    from pyarrow import csv

    options = csv.ParseOptions(delimiter="," if fmt == "csv" else "\t")
    return ray.data.read_csv(source, parse_options=options, num_cpus=_READ_CPUS)
