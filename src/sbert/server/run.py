"""Start a server: load everything first (a broken index or cross-encoder stops it there), then uvicorn.

SIGTERM drains: new requests get 503 while those in flight finish, then the process exits 0. A
second SIGTERM, or SIGINT, is uvicorn's own graceful stop.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn

from sbert.base.errors import ModelLoadError
from sbert.inference.cuda.graphs import BATCH_BUCKETS
from sbert.server.abilities import is_sparse
from sbert.server.app import create_app
from sbert.server.batcher import Batcher, TokenBudget
from sbert.server.engine import EngineDied, EngineProcess
from sbert.server.gate import Gate
from sbert.server.service import Service, Services
from sbert.server.serving_plan import (
    default_batch_tokens,
    on_gpu_pipeline,
    parallel_passes,
    pass_cost,
    unpadded,
)
from sbert.server.settings import ServeOptions
from sbert.server.tokens import ArrivalTokens

logger = logging.getLogger("sbert")
WARM_UP = ["A warm-up sentence.", "Another, somewhat longer sentence to compile a second shape for."]


class DrainingServer(uvicorn.Server):
    """uvicorn, with a SIGTERM that drains before it stops (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, gate: Gate, drain_timeout: float) -> None:
        super().__init__(config)
        self.gate, self.drain_timeout = gate, drain_timeout
        self.drain_started: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM and self.drain_started is None:
            # Not recorded as a captured signal: uvicorn would raise it again on the way out,
            # and the default SIGTERM action would turn a clean drain into exit status -15.
            self.drain_started = time.monotonic()
            self.gate.draining = True
            logger.warning("SIGTERM: draining %d request(s) in flight", self.gate.in_flight)
            return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if self.drain_started is not None and (
            self.gate.in_flight == 0 or time.monotonic() - self.drain_started > self.drain_timeout
        ):
            self.should_exit = True
        return await super().on_tick(counter)


def build_service(
    model: Any, options: ServeOptions, names: Sequence[str] = (), load: Callable[[], Any] | None = None
) -> Service:
    """The model's batcher, the index and the cross-encoder, all loaded and checked now; ``names``:
    the names a request may give the model, the first the one answers give (none: its own name);
    ``load``: how the engine process loads the model again (``options.engine_process``)."""
    index = load_index(model, options.index) if options.index else None
    cross_encoder = (
        load_cross_encoder(options.cross_encoder, getattr(model, "device", "cpu"))
        if options.cross_encoder
        else None
    )
    budget = token_budget(model, options)  # before the warm-up: it builds the GPU pipeline
    # Compile (and calibrate) now, the packed graph too, so that no request waits for it.
    vectors = model.encode(WARM_UP, show_progress_bar=False, pack=options.batching.pack)
    if index is not None:
        try:
            queries = vectors[:1] if is_sparse(model) else index.query_vectors(vectors[:1])
            index.search(queries, top_k=1)
        except ValueError as error:  # an empty index
            raise ModelLoadError(f"{options.index}: {error}") from error
    if cross_encoder is not None:
        cross_encoder.predict([(WARM_UP[0], WARM_UP[1])])
    if on_gpu_pipeline(model):
        warm_up_graphs(model)
    batcher = Batcher(
        model,
        options.batching,
        parallel_passes(model),
        token_budget=budget,
        batch_cost_tokens=pass_cost(model),
        engine=engine_process(model, load) if options.engine_process else None,
    )
    model_id, *aliases = names or [Path(str(model.name)).name]
    return Service(
        model, batcher, model_id, options.limits, index, options.index, cross_encoder, aliases=tuple(aliases)
    )


def engine_process(model: Any, load: Callable[[], Any] | None) -> EngineProcess | None:
    """``--engine-process``: the model's forward passes in a process of their own, started and
    loaded now (a model that fails to load there stops the server here); ``None`` where the server
    does not tokenize the model's texts itself (a static model, a router), for a sparse model (the
    engine sends dense float32 rows back, a vocabulary wide), whose passes stay on the batcher's
    thread, or without a loader."""
    if load is None or not ArrivalTokens.supports(model) or is_sparse(model):
        logger.warning("--engine-process: %s runs on the batcher's thread (dense models only)", model.name)
        return None
    engine = EngineProcess(load)
    try:
        engine.wait_ready()
    except EngineDied as error:
        raise ModelLoadError(f"--engine-process: {error}") from error
    return engine


def load_index(model: Any, path: str) -> Any:
    """``--index``: a dense model's :class:`~sbert.index.VectorIndex`, a sparse model's
    :class:`~sbert.index.sparse_index.SparseIndex` (``sbert index build --kind sparse``), each checked
    against the model that made it; the other kind of index is refused by name."""
    from sbert.index.sparse_index import SparseIndex, is_sparse_index

    if is_sparse(model) != is_sparse_index(path):
        made = "a sparse index" if is_sparse_index(path) else "a dense index"
        wanted = "sparse index (sbert index build --kind sparse)" if is_sparse(model) else "dense index"
        raise ModelLoadError(f"--index {path}: {made}, and {model.name} needs a {wanted}")
    if is_sparse(model):
        return SparseIndex.load(path, model.encoder)  # IndexLoadError names the file
    from sbert.index import VectorIndex

    return VectorIndex.load(path, model)


def token_budget(model: Any, options: ServeOptions) -> TokenBudget | None:
    """On the GPU pipeline, TEI's batches of ``--max-batch-tokens`` tokens (default 16384), which
    the pipeline then runs as one pass each (its own budget set to the same); elsewhere ``None``."""
    if not on_gpu_pipeline(model):
        return None
    from sbert.inference.cuda.pipeline import PipelineOptions

    tokens = options.batching.max_batch_tokens or default_batch_tokens(model)
    model.runners.pipeline_options = PipelineOptions(max_batch_tokens=tokens)
    return TokenBudget(tokens, padded=not unpadded(model))


def warm_up_graphs(model: Any) -> None:
    """Capture the CUDA graphs of one to eight short sentences now, so that the first lone query
    does not pay for a capture (longer queries' shapes are captured on first use)."""
    for count in BATCH_BUCKETS:
        model.encode(WARM_UP[:1] * count, show_progress_bar=False)


def load_cross_encoder(path: str, device: Any = "cpu") -> Any:
    """A trained one-output cross-encoder, on ``device`` (the served model's: a GPU server reranks on
    the GPU, at the precision its plan picks there); a plain encoder (which would get an untrained
    head) is refused."""
    from sbert.cross_encoder import CONFIG_FILE, CrossEncoder
    from sbert.cross_encoder.loading import folder_has_head

    folder = Path(path)
    config = folder / "config.json"
    if not config.is_file():
        raise ModelLoadError(f"{config}: missing; --cross-encoder needs a saved cross-encoder directory")
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"{config}: cannot be read: {error}") from error
    if not folder_has_head(folder):
        raise ModelLoadError(
            f"{folder}: not a cross-encoder (no {CONFIG_FILE}, no sequence-classification head in "
            "config.json); serving it would score with an untrained head"
        )
    cross_encoder = CrossEncoder.from_pretrained(folder, device=device)
    if cross_encoder.num_labels != 1:
        raise ModelLoadError(
            f"{folder}: a {cross_encoder.num_labels}-label classifier; /rerank needs a one-output (score) model"
        )
    return cross_encoder


def serve(
    models: Sequence[tuple[Sequence[str], Any]],
    options: ServeOptions,
    loaders: Sequence[Callable[[], Any] | None] = (),
) -> int:
    """Serve until SIGTERM (drained) or SIGINT; returns the exit status.

    ``models``: each model with its served names (:meth:`Services.names`), each with its own batcher
    (a request picks one by ``model``); the first is the default, and the one the index and the
    cross-encoder go with. ``loaders``: how each model is loaded again, for ``--engine-process``.
    """
    loads = list(loaders) or [None] * len(models)
    others = replace(options, index=None, cross_encoder=None)
    services = Services(
        [
            build_service(model, options if i == 0 else others, names, loads[i])
            for i, (names, model) in enumerate(models)
        ]
    )
    app = create_app(services, options.api_key, options.max_concurrent_requests)
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        access_log=False,
        timeout_graceful_shutdown=int(options.drain_timeout),
    )
    server = DrainingServer(config, app, options.drain_timeout)
    for service in services.all:
        service.batcher.start()
    try:
        server.run()
    finally:
        for service in services.all:
            service.batcher.close(timeout=options.drain_timeout)
    return 0 if server.started else 1
