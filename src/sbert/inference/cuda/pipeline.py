"""The GPU encode pipeline: host work for the next batches overlaps the device's work on this one.

On a GPU the forward pass of a small model outruns the host: sorting, padding, copying and waiting
for each batch's result leave the device idle (issue 35). Here texts are tokenized a chunk ahead
on one host thread, and another assembles batch k+1 (flat token arrays in page-locked memory) while
the device runs batch k; copies are non-blocking; every batch's vectors are written into one device
tensor in input order, and the host waits for the device once, at the end. Batches are cut by tokens,
not sentences (:func:`~sbert.base.batching.token_budget_batches`), and BERT models run unpadded
(:mod:`sbert.inference.cuda.unpadded`); small batches replay CUDA graphs (:mod:`sbert.inference.cuda.graphs`).
Other models run padded batches under autocast.

Nothing here needs CUDA: on the CPU the same code runs without pinned memory or graphs, which is how
the tests check it against the padded path.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sbert.base.batching import MAX_BATCH_TOKENS, length_sorted_batches, token_budget_batches
from sbert.inference.cuda.graphs import GraphedForward, bucket_padded, bucket_shape
from sbert.inference.cuda.unpadded import UnpaddedBatch, UnpaddedBert, padded_tokens, unpadded_batch
from sbert.inference.fast_bert import FastBert, supports
from sbert.inference.runner import RunOptions
from sbert.modules import Pooling, Transformer

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# Sentences tokenized at a time by run_texts: small enough that the first chunk, which nothing
# overlaps, is a fraction of a pass; large enough for several token-budget batches.
TOKENIZE_CHUNK = 4096
# Up to this many texts, run_texts tokenizes on the calling thread: a thread pool would cost more
# than it saves (one query's latency).
SMALL_INPUT = 64
# Tokenizing threads at most: each holds a tokenizer copy (a few MB; tens for 250k-token vocabularies),
# and past this the GIL-held part of each encode (building the ids' Python lists) leaves little to gain.
MAX_TOKENIZING_THREADS = 16


@dataclass(frozen=True)
class PipelineOptions:
    """How the pipeline runs, beyond one call's :class:`RunOptions`.

    Attributes:
        max_batch_tokens: Most tokens in one batch; ``None``: :data:`~sbert.base.batching.MAX_BATCH_TOKENS`
            on CUDA, where batches are cut by tokens and ``batch_size`` does not apply, and batches of
            ``batch_size`` sentences elsewhere. A call's ``max_tokens`` lowers it.
        graphs: Replay CUDA graphs for batches that fit a bucket; ``None``: on CUDA only (on the CPU,
            ``True`` runs the bucketed shapes without graphs, which the tests use).
        prefetch: Batches assembled ahead of the device.
        tokenize_threads: Host threads tokenizing texts; ``None``: :func:`tokenizing_threads`.
    """

    max_batch_tokens: int | None = None
    graphs: bool | None = None
    prefetch: int = 2
    tokenize_threads: int | None = None


def tokenizing_threads() -> int:
    """Threads for tokenizing: the cores this process may use but two (the thread that drives the
    device and the one that assembles batches), at most :data:`MAX_TOKENIZING_THREADS`, at least 1.
    Each thread encodes with its own tokenizer copy, so they scale with the cores: 8 → 15 threads ran
    160k → 244k sentences/s on an H200's 16-core host (2026-11-27, ``benchmarks/tokenizing_options.py``)."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere every core counts
    cores = len(affinity(0)) if affinity else (os.cpu_count() or 1)
    return max(1, min(MAX_TOKENIZING_THREADS, cores - 2))


@dataclass
class _HostBatch:
    order: Tensor  # (batch,) the batch's sentences in the input
    kind: str  # "graph", "unpadded" or "padded"
    inputs: Any  # an UnpaddedBatch, or a (input_ids, attention_mask) pair, or collate()'s features


class CudaPipeline:
    """Token ids → sentence vectors ``(n, dim)``, float32, on the CPU, in input order.

    Args:
        transformer: The token-level encoder (its device is where the pipeline runs).
        pooling: The encoder's pooling.
        after_pooling: The layers after pooling (Dense, Normalize), on ``(batch, hidden)`` vectors.
        dtype: ``torch.float32``, ``torch.float16`` or ``torch.bfloat16``.
        options: See :class:`PipelineOptions`.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained(device="cpu", precision="float32", backend="torch")
        >>> pipeline = CudaPipeline(model.transformer, model.pooling, model.after_pooling, torch.float32)
        >>> ids = model.token_ids(["A man plays a guitar.", "Rain."]).ids
        >>> pipeline.run(ids, RunOptions(), lambda done: None).shape
        torch.Size([2, 384])
    """

    def __init__(
        self,
        transformer: Transformer,
        pooling: Pooling,
        after_pooling: Callable[[Tensor], Tensor],
        dtype: torch.dtype,
        options: PipelineOptions | None = None,
    ) -> None:
        self.transformer = transformer
        self.pooling = pooling
        self.after_pooling = after_pooling
        self.dtype = dtype
        self.options = options or PipelineOptions()
        self.device = next(transformer.parameters()).device
        self.cuda = self.device.type == "cuda"
        model = transformer.model
        self.bert = UnpaddedBert(model, dtype) if supports(model) else None
        self.pad_id = int(transformer.tokenizer.pad_token_id or 0)
        # A head over real tokens (a SPLADE head: pools_real_tokens) takes the unpadded batch's flat
        # tokens as they are; a graph's bucket would run its vocabulary-wide product on padding.
        self.real_tokens = bool(getattr(pooling, "pools_real_tokens", False))
        # A head that reads each sentence's first token alone (a cross-encoder's classifier): the
        # last layer is computed for that token only.
        self.first_token = bool(getattr(pooling, "reads_first_token", False))
        graphs = self.cuda if self.options.graphs is None else self.options.graphs
        graphs = graphs and not self.real_tokens
        self.graphs = GraphedForward(self._padded_bert, self.device) if graphs and self.bert else None
        # Host threads, made once for the pipeline's life (on first need: one query never needs
        # them) and shut down when it is collected (the encoder builds a new one when weights change).
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._pools_lock = threading.Lock()

    def run(
        self, ids: Sequence[Sequence[int]], options: RunOptions, progress: Callable[[int], None]
    ) -> Tensor:
        """Pooled sentence vectors after the layers after pooling, ``(n, dim)`` float32 on the CPU, in
        input order. ``progress`` is called with each batch's number of sentences."""
        return self._on_device(ids, options, progress).cpu()  # the one wait for the device

    def run_texts(
        self,
        texts: Sequence[str],
        tokenize: Callable[[Sequence[str]], Sequence[Sequence[int]]],
        options: RunOptions,
        progress: Callable[[int], None],
        chunk: int = TOKENIZE_CHUNK,
    ) -> Tensor:
        """:meth:`run` on texts, tokenized ``chunk`` at a time by host threads: chunk i+1 while the
        device runs chunk i. ``tokenize`` is called from several threads at once (the Rust tokenizer
        releases the GIL; :class:`~sbert.modules.batch_tokenizer.BatchTokenizer` is safe so). Batches
        never span two chunks; unpadded, that costs no padding. Each chunk's vectors are copied to
        the host as soon as the device has them (non-blocking), so the device holds one chunk's,
        whatever the input's size."""
        if len(texts) <= SMALL_INPUT:  # nothing to overlap: no thread (one query's latency)
            return self.run(tokenize(texts), options, progress)
        parts: list[Tensor] = []
        for ids in self.tokenized_chunks(texts, tokenize, chunk):
            # Non-blocking (pinned on CUDA): the host goes on to the next chunk meanwhile.
            parts.append(self._on_device(ids, options, progress).to("cpu", non_blocking=True))
        if self.cuda:
            torch.cuda.current_stream(self.device).synchronize()  # the non-blocking copies have landed
        return torch.cat(parts) if parts else torch.empty((0, 0))

    @property
    def tokenize_threads(self) -> int:
        """Host threads that tokenize texts (:attr:`PipelineOptions.tokenize_threads`, else
        :func:`tokenizing_threads`)."""
        return self.options.tokenize_threads or tokenizing_threads()

    def tokenized_chunks(
        self,
        texts: Sequence[str],
        tokenize: Callable[[Sequence[str]], Sequence[Sequence[int]]],
        chunk: int = TOKENIZE_CHUNK,
    ) -> Iterator[list[Sequence[int]]]:
        """Each chunk's token ids, in order. One core tokenizes 12-25k short sentences a second, where
        an H100's forward pass alone runs 133k (issue 35): a chunk is cut into one piece per thread,
        and the next chunk's pieces are queued before this one is handed over, so the threads never
        wait for the device. ``tokenize`` should encode with a copy per thread (``encode()``'s does,
        :class:`~sbert.modules.batch_tokenizer.ThreadTokenizers`): one shared copy contends."""
        threads = self.tokenize_threads
        piece = max(1, -(-chunk // threads))
        pool = self._pool("sbert-tokenize", threads)

        def submit(start: int) -> list[Future[Sequence[Sequence[int]]]]:
            stop = min(start + chunk, len(texts))
            return [pool.submit(tokenize, texts[s : min(s + piece, stop)]) for s in range(start, stop, piece)]

        pending = submit(0)
        for start in range(0, len(texts), chunk):
            ready, pending = pending, submit(start + chunk) if start + chunk < len(texts) else []
            yield list(itertools.chain.from_iterable(future.result() for future in ready))

    def _pool(self, name: str, threads: int) -> ThreadPoolExecutor:
        """The pipeline's pool of host threads called ``name``, made on first use."""
        with self._pools_lock:
            pool = self._pools.get(name)
            if pool is None:
                pool = self._pools[name] = ThreadPoolExecutor(threads, thread_name_prefix=name)
                weakref.finalize(self, pool.shutdown, wait=False)
            return pool

    def _on_device(
        self, ids: Sequence[Sequence[int]], options: RunOptions, progress: Callable[[int], None]
    ) -> Tensor:
        """:meth:`run`'s vectors left on the device, every batch queued without waiting for it."""
        batches = self.batches([len(row) for row in ids], options)
        output: Tensor | None = None  # (n, dim) on the device, allocated when the first batch gives dim
        with torch.inference_mode():
            for done in self._prefetched(ids, batches):
                batch = done.result()
                order = batch.order.to(self.device, non_blocking=self.cuda)
                vectors = self._forward(batch, options.prompt_length).float()  # (batch, dim)
                if output is None:
                    output = torch.empty((len(ids), vectors.shape[1]), device=self.device)
                output.index_copy_(0, order, vectors)
                progress(len(batch.order))
        return torch.empty((0, 0), device=self.device) if output is None else output

    def batches(self, lengths: Sequence[int], options: RunOptions) -> list[np.ndarray]:
        """Index arrays, longest first: by tokens where a budget applies (CUDA), else by sentences."""
        budget = self.options.max_batch_tokens or (MAX_BATCH_TOKENS if self.cuda else None)
        if budget is None:
            return length_sorted_batches(
                lengths, options.batch_size, options.max_tokens, options.batch_cost_tokens
            )
        budget = min(budget, options.max_tokens or budget)
        if self.bert is not None:
            return token_budget_batches(lengths, budget)
        return length_sorted_batches(lengths, budget, max_tokens=budget)  # padded: sentences × longest

    def _prefetched(
        self, ids: Sequence[Sequence[int]], batches: Sequence[np.ndarray]
    ) -> Iterator[Future[_HostBatch]]:
        pending: deque[Future[_HostBatch]] = deque()
        if len(batches) == 1:  # nothing to overlap: assembled here, not pinned (one query's latency)
            done: Future[_HostBatch] = Future()
            done.set_result(self._assemble(ids, batches[0], pin=False))
            pending.append(done)
            yield from pending
            return
        host = self._pool("sbert-host", 1)
        for batch in batches:
            pending.append(host.submit(self._assemble, ids, batch))
            if len(pending) > self.options.prefetch:
                yield pending.popleft()
        yield from pending

    def _assemble(self, ids: Sequence[Sequence[int]], batch: np.ndarray, pin: bool = True) -> _HostBatch:
        """The host half of a batch (runs on the host thread): flat or padded arrays, pinned on CUDA
        (``pin``: a copy from pinned memory does not wait for the device; a single batch has nothing
        to overlap, and pinning costs an allocation)."""
        rows = [ids[i] for i in batch]
        shape = bucket_shape(len(rows), max(map(len, rows))) if self.graphs is not None else None
        inputs: Any
        if shape is not None:
            kind, inputs = "graph", bucket_padded(rows, shape, self.pad_id)
        elif self.bert is not None:
            kind, inputs = "unpadded", unpadded_batch(rows)
        else:
            kind, inputs = "padded", self.transformer.collate(rows)
        order = torch.from_numpy(np.ascontiguousarray(batch, dtype=np.int64))
        if self.cuda and pin:
            order, inputs = order.pin_memory(), _convert(inputs, Tensor.pin_memory)
        return _HostBatch(order, kind, inputs)

    def _forward(self, batch: _HostBatch, prompt_length: int) -> Tensor:
        """The device half of a batch: sentence vectors ``(batch, dim)``, queued without a host sync."""
        inputs = _convert(batch.inputs, lambda tensor: tensor.to(self.device, non_blocking=self.cuda))
        if batch.kind == "graph":
            assert self.graphs is not None
            input_ids, attention_mask = inputs
            return self.graphs(input_ids, attention_mask, prompt_length)[: len(batch.order)]
        if batch.kind == "unpadded":
            assert self.bert is not None
            unpadded: UnpaddedBatch = inputs
            if self.first_token:
                first = self.bert(unpadded, first_token=True)  # (batch, 1, hidden)
                return self.after_pooling(self.pooling(first, unpadded.token_mask[:, :1], prompt_length))
            flat = self.bert(unpadded)  # (total, hidden)
            if self.real_tokens:  # each token's sentence: its row in the padded block, no host sync
                sentence = torch.div(unpadded.flat_index, unpadded.longest, rounding_mode="floor")
                return self.after_pooling(self.pooling.pool_tokens(flat, sentence, len(batch.order)))  # type: ignore[operator]
            tokens = padded_tokens(flat, unpadded)  # (batch, longest, hidden)
            return self.after_pooling(self.pooling(tokens, unpadded.token_mask, prompt_length))
        autocast = (
            torch.autocast(self.device.type, dtype=self.dtype)
            if self.dtype != torch.float32
            else contextlib.nullcontext()
        )
        with autocast:
            tokens = self.transformer(inputs)  # (batch, seq, hidden)
            pooled = self.pooling(tokens.float(), inputs["attention_mask"], prompt_length)
        return self.after_pooling(pooled)

    def _padded_bert(self, input_ids: Tensor, attention_mask: Tensor, prompt_length: int) -> Tensor:
        """What a CUDA graph records: the padded BERT forward pass with the same converted weights."""
        assert self.bert is not None
        weights: FastBert = self.bert.weights
        tokens = weights(input_ids, attention_mask, self.first_token)  # (batch, seq or 1, hidden)
        mask = attention_mask[:, : tokens.shape[1]]
        return self.after_pooling(self.pooling(tokens, mask, prompt_length)).float()


def _convert(inputs: Any, convert: Callable[[Tensor], Tensor]) -> Any:
    """Every tensor of a batch's inputs through ``convert`` (pinning, copying to the device)."""
    if isinstance(inputs, UnpaddedBatch):
        return inputs.map(convert)
    if isinstance(inputs, dict):
        return {key: convert(value) for key, value in inputs.items()}
    return tuple(convert(tensor) for tensor in inputs)
