"""The Ray Data engine: Ray reads the input, a pool of actors (each loading the model once) encodes
batches, and the driver writes the same shards and manifest as the local engine, in input order.

Each actor loads the model by the name or path it was loaded with here and checks its fingerprint,
so a worker that finds another model under that name (or none) stops the run instead of mixing
vectors. On a cluster the model path and the input must be reachable from every node (shared
storage, a URI pyarrow opens, or the bundled model installed with sbert).

A model on a CUDA device gets one actor per GPU of the cluster (``num_gpus=1`` each, so Ray gives
each its own device), every actor running the GPU pipeline at the driver's requested precision: the
store holds what one GPU would write (to float rounding: batches differ) and its manifest's plan is
what the workers ran.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.embeddings.identity import model_identity
from sbert.store.writer import StoreWriter

if TYPE_CHECKING:
    from sbert.encoder.model import SentenceEncoder

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
        device: str = "cpu",
    ) -> None:
        import torch

        from sbert.embeddings.identity import ModelMismatchError
        from sbert.encoder.model import SentenceEncoder

        torch.set_num_threads(threads)
        self.model = SentenceEncoder.from_pretrained(device=device, **load)
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
    plan = worker_plan(ray.cluster_resources(), model.device.type, workers)
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
            "threads": plan.threads,
            "columns": ("text" if fmt == "txt" else column, id_column),
            "device": plan.device,
        },
        batch_size=chunk_rows,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=plan.workers),
        num_cpus=plan.num_cpus,
        num_gpus=plan.num_gpus,
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


@dataclass(frozen=True)
class WorkerPlan:
    """The actor pool: how many, on what, with which Ray resources each."""

    workers: int
    device: str  # "cpu" or "cuda" (Ray gives each GPU actor its own device as cuda:0)
    num_cpus: float
    num_gpus: float
    threads: int  # torch threads per actor


def worker_plan(resources: Mapping[str, float], device: str, workers: int | None = None) -> WorkerPlan:
    """One actor per GPU for a model on CUDA, else one per CPU (or ``workers`` of them).

    Examples:
        >>> worker_plan({"CPU": 16.0, "GPU": 2.0}, "cuda")
        WorkerPlan(workers=2, device='cuda', num_cpus=7.75, num_gpus=1, threads=8)
        >>> worker_plan({"CPU": 4.0}, "cpu").workers
        4

    Raises:
        ValueError: a model on CUDA with a cluster without GPUs, or more workers than GPUs.
    """
    cpus, gpus = float(resources.get("CPU", 1)), int(resources.get("GPU", 0))
    if device == "cuda":
        if gpus < 1:
            raise ValueError(
                "the model runs on CUDA but the Ray cluster has no GPU; load it with device='cpu' "
                "(--device cpu) to encode on CPU workers"
            )
        if workers is not None and workers > gpus:
            raise ValueError(f"workers={workers}, but the Ray cluster has {gpus} GPU(s): one worker per GPU")
        count = workers or gpus
    else:
        count = workers or max(1, int(cpus))
    # Actors leave a sliver of CPU for Ray's read tasks: taking every CPU deadlocks the pipeline.
    return WorkerPlan(
        workers=count,
        device=device,
        num_cpus=max(0.1, (cpus - _READ_CPUS * 2) / count),
        num_gpus=1 if device == "cuda" else 0,
        threads=max(1, round(cpus / count)),
    )


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
