"""A cross-encoder's ``/rerank`` requests on the batcher: merged into one engine call, as texts are.

Each request (a query and its documents) is one :class:`PairJob` on the served model's batcher
queue. The worker takes the oldest job and every pair job of the same cross-encoder queued behind
it (:class:`~sbert.server.batcher.Batcher` merges them as it merges embedding jobs) and scores
their pairs in one call of the cross-encoder's engine
(:meth:`~sbert.CrossEncoder.tokens_logits`) with the batching embedding jobs get: packed rows where
the cross-encoder's plan packs (``--pack``), else length-sorted batches of at most
``--max-batch-tokens`` padded tokens, cut at the cost of a pass on OpenVINO; on the GPU pipeline,
TEI's token budget. Each request then gets its own scores back (the sigmoid, or the logit with
``raw_scores``). A request's pairs are tokenized as it arrives, on the batcher's token pool
(:func:`pair_tokens`), as a dense model's texts are, so that the worker only runs the model. A
request refused (``truncate: false`` and a pair over the limit) or whose pairs cannot be tokenized
fails alone; the others of its batch are scored.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sbert.base.inputs import tokenized
from sbert.cross_encoder.engine import TokenizedPairs, tokenize_pairs
from sbert.cross_encoder.scores import activated
from sbert.inference.runner import RunOptions
from sbert.server.batcher import Batcher, BatchStats, InputTooLong, Overloaded, ServerClosed
from sbert.server.serving_plan import on_gpu_pipeline, parallel_passes, pass_cost, unpadded
from sbert.server.tokens import TokenBudget

logger = logging.getLogger("sbert")


@dataclass
class PairJob:
    """One /rerank request for the cross-encoder ``model``: ``(query, document)`` for each document;
    the future holds the scores (n,) float32 in document order."""

    model: Any  # a one-output CrossEncoder, used only on the worker's thread
    query: str
    documents: list[str]
    truncate: bool = True
    raw: bool = False  # the logit rather than the activation of it (TEI's raw_scores)
    future: Future[np.ndarray] = field(default_factory=Future)
    tokens: Future[PairTokens] = field(default_factory=Future)  # tokenized on arrival (pair_tokens)

    @property
    def items(self) -> int:
        return len(self.documents)

    @property
    def key(self) -> Any:
        return ("pairs", id(self.model))  # only one cross-encoder's pairs share a batch

    def target(self, batcher: Batcher) -> int:
        """Most pairs one take merges: as for texts, by the cross-encoder's own engine."""
        plan = PairBatching.of(self.model, batcher)
        return plan.budget.tokens if plan.budget else plan.parallel * batcher.settings.max_batch_size

    def run_merged(self, batcher: Batcher, jobs: list[Any]) -> None:
        try:
            score_jobs(batcher, jobs)
        except BaseException as error:  # the worker must outlive any one batch
            logger.exception("scoring %d merged /rerank requests failed", len(jobs))
            for job in jobs:
                if not job.future.done():
                    job.future.set_exception(error)


def rerank(
    batcher: Batcher,
    model: Any,
    query: str,
    documents: Sequence[str],
    truncate: bool = True,
    raw: bool = False,
) -> Future[np.ndarray]:
    """Queue one request's pairs on the batcher; the future holds their scores (n,) float32.

    Raises:
        Overloaded, ServerClosed: as :meth:`~sbert.server.batcher.Batcher.embed`.

    Not run by the tests as a doctest: it needs a started batcher (tests/server/test_pair_jobs.py drives one).

    Examples:
        >>> future = rerank(batcher, cross_encoder, "music", ["a guitar solo", "a tax form"])  # doctest: +SKIP
        >>> future.result().shape  # doctest: +SKIP
        (2,)
    """
    job = PairJob(model, query, list(documents), truncate, raw)
    job.tokens = batcher.tokenize(pair_tokens, model, job.query, job.documents, truncate)
    try:
        batcher.submit(job)
    except (Overloaded, ServerClosed):
        job.tokens.cancel()
        raise
    return job.future


@dataclass(frozen=True)
class PairBatching:
    """How a cross-encoder's merged pairs are cut: as the batcher cuts a model's texts."""

    parallel: int  # passes the engine runs side by side (OpenVINO: one per core)
    cost: int | None  # a pass's cost beyond its tokens (serving_plan.pass_cost)
    budget: TokenBudget | None  # on the GPU pipeline, TEI's budget; else None

    @classmethod
    def of(cls, model: Any, batcher: Batcher) -> PairBatching:
        tokens = batcher.settings.max_batch_tokens
        budget = (
            TokenBudget(tokens, padded=not unpadded(model)) if tokens and on_gpu_pipeline(model) else None
        )
        return cls(parallel_passes(model), pass_cost(model), budget)


@dataclass(frozen=True)
class PairTokens:
    """A request's pairs tokenized on arrival: token ids and segments (those over the limit cut as
    :meth:`~sbert.CrossEncoder.tokenize` cuts them, unless the request is refused for them), and
    each pair's token count before cutting."""

    tokens: TokenizedPairs
    counts: list[int]


@dataclass
class _Live:
    """A job being scored, with its pairs' tokens."""

    job: PairJob
    tokens: TokenizedPairs
    counts: list[int]


# transformers' call reconfigures the Rust tokenizer it shares (truncation on or off) before each
# encode (sbert.modules.batch_tokenizer), so the token pool's threads take turns on a cross-encoder's.
_TOKENIZER = threading.Lock()


def pair_tokens(model: Any, query: str, documents: Sequence[str], truncate: bool = True) -> PairTokens:
    """``[CLS] query [SEP] document [SEP]`` for each document, on a token pool thread as the request
    arrives: tokenized whole (the counts), then the pairs over the limit tokenized again, cut the
    longer sentence first, so that every pair's ids are ``predict``'s; lone surrogates replaced
    (:func:`~sbert.base.inputs.tokenized`'s one retry), as a dense model's texts."""
    limit = int(model.max_seq_length)
    with _TOKENIZER:
        whole = tokenized(lambda texts: _pairs(model, texts, None), [query, *documents])
        counts = whole.lengths
        over = [i for i, count in enumerate(counts) if count > limit]
        if not over or not truncate:  # a request refused for a long pair is never scored
            return PairTokens(whole, counts)
        cut = tokenized(lambda texts: _pairs(model, texts, limit), [query, *(documents[i] for i in over)])
    ids, types = list(whole.ids), list(whole.token_types)
    for i, row, segments in zip(over, cut.ids, cut.token_types):
        ids[i], types[i] = row, segments
    return PairTokens(TokenizedPairs(ids, types, len(over)), counts)


def _pairs(model: Any, texts: list[str], limit: int | None) -> TokenizedPairs:
    """``texts[0]`` paired with each of ``texts[1:]``: not cut (``limit`` ``None``), or cut to ``limit``."""
    pairs = [(texts[0], text) for text in texts[1:]]
    if limit is not None:
        return tokenize_pairs(model.tokenizer, pairs, limit)
    encoded = model.tokenizer(
        [a for a, _ in pairs],
        [b for _, b in pairs],
        truncation=False,
        padding=False,
        return_attention_mask=False,
        return_token_type_ids=True,
        verbose=False,
    )
    return TokenizedPairs(encoded["input_ids"], encoded["token_type_ids"], 0)


def score_jobs(batcher: Batcher, jobs: list[PairJob]) -> None:
    """Score the merged jobs (one cross-encoder's) on the worker: each job gets its scores, or its error."""
    model = jobs[0].model
    limit = int(model.max_seq_length)
    live: list[_Live] = []
    for job in jobs:
        if not job.future.set_running_or_notify_cancel():
            continue
        try:
            arrived = job.tokens.result()  # tokenized on arrival (pair_tokens)
        except BaseException as error:  # its pairs could not be tokenized: it fails alone
            job.future.set_exception(error)
            continue
        too_long = [(index, count) for index, count in enumerate(arrived.counts) if count > limit]
        if too_long and not job.truncate:
            job.future.set_exception(InputTooLong(*too_long[0], limit))
        else:
            live.append(_Live(job, arrived.tokens, arrived.counts))
    plan = PairBatching.of(model, batcher)
    if plan.budget is None:
        _score(batcher, plan, live)
        return
    for run in plan.budget.groups([[min(count, limit) for count in each.counts] for each in live]):
        _score(batcher, plan, live[run.start : run.stop])  # TEI: each batch answered when done


def _score(batcher: Batcher, plan: PairBatching, live: list[_Live]) -> None:
    """One engine call for the jobs' pairs; each job gets its scores (or the error)."""
    if not live:  # every job of the take was refused: nothing to score
        return
    model, settings = live[0].job.model, batcher.settings
    tokens = TokenizedPairs(
        [row for each in live for row in each.tokens.ids],
        [row for each in live for row in each.tokens.token_types],
        0,
    )
    size = max(1, min(settings.max_batch_size, math.ceil(len(tokens.ids) / plan.parallel)))
    options = RunOptions(size, settings.max_batch_tokens, plan.cost, settings.pack)
    start = time.perf_counter()
    try:
        logits = model.tokens_logits(tokens, options)  # (n, 1) float32
    except BaseException as error:
        logger.exception("scoring a batch of %d pairs failed", len(tokens.ids))
        for each in live:
            each.job.future.set_exception(error)
        return
    seconds = time.perf_counter() - start
    offset = 0
    for each in live:
        job = each.job
        activation = None if job.raw else model.activation_fn
        scores = activated(logits[offset : offset + job.items], activation, apply_softmax=False)
        job.future.set_result(np.asarray(scores.float().numpy(), dtype=np.float32))
        offset += job.items
    limit = int(model.max_seq_length)
    counted = sum(min(count, limit) for each in live for count in each.counts)
    batcher.finished(BatchStats(len(live), len(tokens.ids), counted, seconds, kind="pairs"))
