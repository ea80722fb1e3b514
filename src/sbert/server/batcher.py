"""Dynamic batching: concurrent requests merged into one encode() call, packed or in length-sorted batches.

One worker thread owns the model. Callers put jobs on a bounded queue
(:class:`~sbert.server.job_queue.JobQueue`, which also says what one take merges) and get a
:class:`concurrent.futures.Future` back; an asyncio server awaits it with ``asyncio.wrap_future``, so
the event loop never runs the model. Each request's texts are tokenized as it arrives, on a pool of
host threads (:mod:`sbert.server.tokens`; private copies of the tokenizer:
:class:`~sbert.modules.batch_tokenizer.BatchTokenizer`). The worker takes the oldest job and every
embedding job queued behind it, up to ``CPU_TAKE_PASSES × parallel_batches × max_batch_size``
sentences on a CPU engine, and encodes them in one engine call (the token ids' ``encode_token_ids``,
a dense or a sparse model's). Where the model allows (BERT on OpenVINO, float32 or bf16) the sentences are
packed into rows without padding (``pack``; in groups of 16, 0.79× the rate of one large
``encode()`` against 0.62× padded: ``benchmarks/packed_groups.py``). Elsewhere they are sorted by
length and cut where padded tokens plus a fixed cost per forward pass are least
(``batch_cost_tokens``), at most ``max_batch_tokens`` padded tokens a batch. Each request then gets
its own rows back.

On the GPU pipeline (``token_budget``) the batcher follows text-embeddings-inference's queue
(core/src/queue.rs at 0d124dc9773be6ac5a9a57d8439aba9bbbf33273): requests are taken in arrival order
while their tokens fit ``max_batch_tokens`` (real tokens where the pipeline runs unpadded,
sentences × longest where it pads), and the next request that would pass it starts the next batch;
``max_batch_size`` does not apply there. Unlike TEI, a request's inputs stay in one ``encode()``
call: a request over the budget alone is one call, which the pipeline cuts into budget-sized passes.
Each batch's requests are answered as soon as it is done.

A cross-encoder's pairs (``/rerank``) are merged and cut the same way (:mod:`sbert.server.pair_jobs`);
jobs of different kinds never share a batch.

With an engine process (``sbert serve --engine-process``, :mod:`sbert.server.engine`) the worker
sends each batch's token ids there and takes the next requests as soon as the engine has room (two
batches out at most); each batch is answered from the engine's reader thread.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import scipy.sparse

from sbert.base.batching import BATCH_COST_TOKENS
from sbert.inference.runner import RunOptions
from sbert.server.engine import EngineProcess
from sbert.server.job_queue import JobQueue
from sbert.server.jobs import (
    BatchStats,
    CallJob,
    Embedded,
    EmbedJob,
    InputTooLong,
    MergedJob,
    Overloaded,
    ServerClosed,
)
from sbert.server.serving_plan import CPU_BATCH_TOKENS, CPU_TAKE_PASSES
from sbert.server.settings import BatchSettings
from sbert.server.tokens import ArrivalTokens, Ids, TokenBudget, token_pool

if TYPE_CHECKING:
    from sbert.encoder.model import SentenceEncoder

logger = logging.getLogger("sbert")
T = TypeVar("T")


class Batcher(JobQueue):
    """A bounded job queue (:class:`~sbert.server.job_queue.JobQueue`) and the one worker thread that runs the model.

    Args:
        model: A :class:`~sbert.SentenceEncoder`; only the worker thread uses it once started.
        settings: Batch size and token caps, the queue bound, the wait under load, packing
            (:class:`~sbert.server.settings.BatchSettings`, whose defaults are ``sbert serve``'s).
        parallel_batches: Forward passes the engine runs side by side (OpenVINO: one per core);
            a merged batch is cut into at least this many so that no core idles.
        on_batch: Called on the worker thread after every merged batch (for metrics).
        in_flight: The requests the server holds (queued, running or being answered); under
            load a batch waits up to ``settings.batch_wait_ms`` for that many.
        batch_cost_tokens: The cost of one forward pass beyond its tokens, in padded tokens (see
            :func:`sbert.base.batching.cheapest_cuts`; 24 measured on a CPU), or ``None`` for batches
            of ``max_batch_size``. Where the model packs (``encode(pack=True)``: BERT on OpenVINO,
            float32 or bf16) rows are packed instead.
        token_budget: Batches cut as TEI's queue cuts them (the GPU pipeline; see the module's
            docstring), of at most ``settings.max_batch_tokens`` tokens; ``None``: by sentences.
        engine: The process that runs the forward passes (:mod:`sbert.server.engine`), where the
            model's texts are tokenized on arrival; ``None``: this process, on the worker thread.

    Not run by the tests: it starts the worker thread (tests/server/test_batcher.py drives it).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> batcher = Batcher(SentenceEncoder.from_pretrained())  # doctest: +SKIP
        >>> batcher.start()  # doctest: +SKIP
        >>> batcher.embed(["A man plays a guitar."]).result().vectors.shape  # doctest: +SKIP
        (1, 384)
        >>> batcher.close()  # doctest: +SKIP
    """

    def __init__(
        self,
        model: SentenceEncoder,
        settings: BatchSettings | None = None,
        parallel_batches: int = 1,
        on_batch: Callable[[BatchStats], None] | None = None,
        in_flight: Callable[[], int] = lambda: 0,
        batch_cost_tokens: int | None = BATCH_COST_TOKENS,
        token_budget: TokenBudget | None = None,
        engine: EngineProcess | None = None,
    ) -> None:
        if parallel_batches < 1:
            raise ValueError(f"parallel_batches must be at least 1, got {parallel_batches}")
        self.model = model
        settings = settings or BatchSettings()
        if settings.max_batch_tokens is None:  # the device's default, or the budget's
            tokens = token_budget.tokens if token_budget else CPU_BATCH_TOKENS
            settings = replace(settings, max_batch_tokens=tokens)
        super().__init__(settings, in_flight, on_batch)
        self.parallel_batches = parallel_batches
        self.batch_cost_tokens = batch_cost_tokens
        self.token_budget = token_budget
        self.engine = engine
        self._thread = threading.Thread(target=self._work, name="sbert-batcher", daemon=True)
        # Each request tokenized once, on arrival, off the worker's thread (sbert.server.tokens):
        # its texts where the model takes token ids, a cross-encoder's pairs (server.pair_jobs).
        self.pool = token_pool()
        self.tokens = ArrivalTokens(model, pool=self.pool) if ArrivalTokens.supports(model) else None

    def start(self) -> None:
        self._thread.start()

    def step(self) -> bool:
        """Take the next unit of work (waiting for one) and run it on the calling thread; ``False``
        once closed and drained. The worker thread loops on it; a test may call it from its own
        thread instead of :meth:`start` (the CUDA-rules fixture watches one thread)."""
        if self.engine is not None:  # take the requests when the engine has room for them
            self.engine.wait_for_room()
        work = self._take()
        if work is None:
            return False
        if isinstance(work, CallJob):
            if work.future.set_running_or_notify_cancel():
                try:
                    work.future.set_result(work.fn())
                except BaseException as error:  # the worker must outlive any one job
                    work.future.set_exception(error)
        elif isinstance(work[0], EmbedJob):
            self._embed(work)
        else:
            work[0].run_merged(self, work)
        return True

    def embed(self, texts: Sequence[str], truncate: bool = True, prompt: str = "") -> Future[Embedded]:
        """Queue texts for encoding, ``prompt`` before each; the future holds an :class:`Embedded`.

        Raises:
            Overloaded: the queue holds ``max_queued_items`` already (a request larger than that is
                taken only when the queue is empty).
            ServerClosed: :meth:`close` was called.
        """
        future: Future[Embedded] = Future()
        job = EmbedJob(list(texts), truncate, future, prompt)
        if self.tokens is not None:  # set before the worker can see the job
            job.ids = self.tokenize(self.tokens.whole, job.texts, prompt)
        try:
            self._put(job)
        except (Overloaded, ServerClosed):
            if job.ids is not None:
                job.ids.cancel()
            raise
        return future

    def submit(self, job: MergedJob) -> None:
        """Queue a job of another kind (:class:`MergedJob`); raises as :meth:`embed` does."""
        self._put(job)

    def tokenize(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """``fn(*args)`` on the token pool, where requests are tokenized as they arrive (off the
        worker's thread, which runs the model); raises :class:`ServerClosed` once closed."""
        try:
            return self.pool.submit(fn, *args)
        except RuntimeError:  # its threads are shut down: close() was called
            raise ServerClosed("the server is shutting down") from None

    def call(self, fn: Callable[[], T], items: int = 1) -> Future[T]:
        """Run ``fn`` on the worker thread in queue order (for work that uses the model's thread:
        a cross-encoder, an index search); ``items`` counts against the queue bound."""
        future: Future[T] = Future()
        self._put(CallJob(fn, items, future))
        return future

    def close(self, timeout: float | None = None) -> None:
        """Take no new work, finish what is queued, stop the worker."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.engine is not None:
            self.engine.close()

    def _target(self, first: EmbedJob | MergedJob) -> int:
        """Most items one take merges: a job of another kind says (:meth:`MergedJob.target`); texts
        on a CPU engine several passes' worth (:data:`~sbert.server.serving_plan.CPU_TAKE_PASSES`),
        which ``encode()`` sorts by length and cuts into passes, and under a token budget as many as
        could fit it (every input is a token at least): :meth:`_embed` cuts by tokens."""
        if not isinstance(first, EmbedJob):
            return first.target(self)
        if self.token_budget is not None:
            return self.token_budget.tokens
        return self.parallel_batches * self.settings.max_batch_size * CPU_TAKE_PASSES

    def _work(self) -> None:
        while self.step():
            pass

    def _embed(self, jobs: list[EmbedJob]) -> None:
        limit = int(self.model.max_seq_length)
        live: list[tuple[EmbedJob, list[int]]] = []
        for job, counts in self._counted([job for job in jobs if job.future.set_running_or_notify_cancel()]):
            too_long = [(index, count) for index, count in enumerate(counts) if count > limit]
            if too_long and not job.truncate:
                job.future.set_exception(InputTooLong(*too_long[0], limit))
            else:
                live.append((job, counts))
        if self.token_budget is None:
            self._encode(live)
            return
        runs = self.token_budget.groups([[min(count, limit) for count in counts] for _, counts in live])
        for run in runs:  # TEI: each batch answered as soon as it is done
            self._encode(live[run.start : run.stop])

    def _encode(self, live: list[tuple[EmbedJob, list[int]]]) -> None:
        """One ``encode()`` call for the jobs' texts; each job gets its rows (or the error). With an
        engine process the call is sent and answered from the engine's thread when done, while this
        worker forms the next batch (the engine never waits for the worker between two batches)."""
        if not live:  # every job of the take was refused (InputTooLong): nothing to encode
            return
        count = sum(job.items for job, _ in live)
        size = max(1, min(self.settings.max_batch_size, math.ceil(count / self.parallel_batches)))
        start = time.perf_counter()
        try:
            vectors = self._vectors(live, size)
        except BaseException as error:
            vectors = Future()
            vectors.set_exception(error)
        vectors.add_done_callback(partial(self._answer, live, start))

    def _vectors(self, live: list[tuple[EmbedJob, list[int]]], size: int) -> Future[Any]:
        """The jobs' vectors (n, dim), in a future: done at once on this thread, or by the engine."""
        done: Future[Any] = Future()
        if self.tokens is None:
            done.set_result(
                self.model.encode(
                    [text for job, _ in live for text in job.texts],
                    batch_size=size,
                    max_tokens=self.settings.max_batch_tokens,
                    batch_cost_tokens=self.batch_cost_tokens,
                    pack=self.settings.pack,
                    show_progress_bar=False,
                    prompt=live[0][0].prompt,
                )
            )
            return done
        ids, options = self._token_ids(live, size)
        if self.engine is not None:
            return self.engine.submit(ids, options)
        vectors = self.model.encode_token_ids(ids, options)  # (n, dim) float32; sparse: CSR
        done.set_result(vectors if scipy.sparse.issparse(vectors) else vectors.numpy())
        return done

    def _answer(self, live: list[tuple[EmbedJob, list[int]]], start: float, done: Future[Any]) -> None:
        """Each job its rows of the batch's vectors, or the batch's error; the rate and metrics."""
        limit = int(self.model.max_seq_length)
        count = sum(job.items for job, _ in live)
        error = done.exception()
        if error is not None:
            logger.error("encoding a batch of %d sentences failed", count, exc_info=error)
            for job, _ in live:
                job.future.set_exception(error)
            return
        vectors = done.result()
        # convert_to_tensor is off; a sparse model (server.sparse_served) gives a CSR matrix,
        # which slices by rows below as an array does
        assert isinstance(vectors, np.ndarray) or scipy.sparse.issparse(vectors)
        truncate_dim = getattr(self.model, "truncate_dim", None) if self.tokens is not None else None
        if truncate_dim is not None:  # token ids run without it: cut as encode() cuts them
            vectors = vectors[:, :truncate_dim]
        seconds = time.perf_counter() - start
        offset = 0
        for job, counts in live:
            job.future.set_result(Embedded(vectors[offset : offset + job.items], counts, limit))
            offset += job.items
        tokens = sum(min(count, limit) for _, counts in live for count in counts)
        self.finished(BatchStats(len(live), count, tokens, seconds))

    def _token_ids(self, live: list[tuple[EmbedJob, list[int]]], size: int) -> tuple[Ids, RunOptions]:
        """What ``encode(texts)`` runs, from the ids tokenized on arrival: inputs over the model's
        limit tokenized again with truncation (as ``encode()`` cuts them), the rest as they are."""
        assert self.tokens is not None
        limit, prompt = int(self.model.max_seq_length), live[0][0].prompt
        ids: Ids = []
        for job, counts in live:
            assert job.ids is not None
            rows = job.ids.result()
            over = [i for i, count in enumerate(counts) if count > limit]
            if over:
                rows = list(rows)
                for i, row in zip(over, self.tokens.truncated([job.texts[i] for i in over], prompt)):
                    rows[i] = row
            ids += rows
        options = RunOptions(
            size,
            self.settings.max_batch_tokens,
            self.batch_cost_tokens,
            self.settings.pack,
            prompt_length=self.tokens.prompt_length(prompt),
        )
        return ids, options

    def _counted(self, jobs: list[EmbedJob]) -> list[tuple[EmbedJob, list[int]]]:
        """Each job with the token counts of its texts, prompt included (the jobs share one), from
        one tokenizer call for all of them (a
        call per job cost 2.4 ms for 64 one-sentence requests, against 0.9 ms). Should that call
        fail, each job is counted alone, and only a job whose own texts fail gets the error. Where the
        texts were tokenized on arrival (:attr:`tokens`), the counts are those ids' lengths."""
        if self.tokens is not None:
            counted = []
            for job in jobs:
                assert job.ids is not None
                try:
                    counted.append((job, [len(row) for row in job.ids.result()]))
                except BaseException as error:
                    job.future.set_exception(error)
            return counted
        try:
            counts = self.model.token_counts(
                [text for job in jobs for text in job.texts], prompt=jobs[0].prompt
            )
        except Exception:
            counted = []
            for job in jobs:
                try:
                    counted.append((job, self.model.token_counts(job.texts, prompt=job.prompt)))
                except BaseException as error:
                    job.future.set_exception(error)
            return counted
        starts = itertools.accumulate((job.items for job in jobs), initial=0)
        return [(job, counts[start : start + job.items]) for job, start in zip(jobs, starts)]


# What the server's modules and its users import from here: the batcher, the jobs' results and errors.
__all__ = [
    "BatchStats",
    "Batcher",
    "Embedded",
    "InputTooLong",
    "MergedJob",
    "Overloaded",
    "ServerClosed",
    "TokenBudget",
]
