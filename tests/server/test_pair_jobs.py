"""A cross-encoder's /rerank requests on the batcher in-process: merged into one engine call, each
request with its own scores (``predict``'s), a refused or broken request failing alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.cross_encoder import CrossEncoder
from sbert.server import pair_jobs
from sbert.server.batcher import Batcher, BatchStats, InputTooLong
from sbert.server.pair_jobs import rerank
from sbert.server.settings import BatchSettings

LONG = " ".join(["music"] * 80)  # with any query, over the tiny model's 64 tokens
REQUESTS = [
    ("music", ["a man plays the guitar", "rain on the street"]),
    ("a dog", ["the dog runs in the park", "a woman plays the piano", "sun", LONG]),
    ("weather", ["rain"]),
]


@pytest.fixture(scope="module")
def cross_encoder(tiny_model_dir: Path) -> CrossEncoder:
    torch.manual_seed(0)
    return CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu", precision="float32")


@pytest.fixture()
def engine_calls(cross_encoder: CrossEncoder, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pairs of each call of the cross-encoder's engine (its batched entry point) on the
    batcher's worker (not the test's own ``predict`` calls)."""
    calls: list[int] = []
    scored = cross_encoder.tokens_logits

    def recorded(tokenized: Any, options: Any, *rest: Any) -> torch.Tensor:
        if threading.current_thread().name == "sbert-batcher":
            calls.append(len(tokenized.ids))
        return scored(tokenized, options, *rest)

    monkeypatch.setattr(cross_encoder, "tokens_logits", recorded)
    return calls


@contextmanager
def served(encoder: SentenceEncoder, jobs: Any, settings: BatchSettings | None = None) -> Iterator[Any]:
    """Queue ``jobs(batcher)`` before the worker starts (so that they merge), then run it."""
    stats: list[BatchStats] = []
    batcher = Batcher(encoder, settings, on_batch=stats.append)
    futures = jobs(batcher)
    batcher.start()
    try:
        yield futures, stats
    finally:
        batcher.close()


def test_queued_requests_merge_into_one_engine_call_with_predicts_scores(
    tiny_encoder: SentenceEncoder, cross_encoder: CrossEncoder, engine_calls: list[int]
) -> None:
    def jobs(batcher: Batcher) -> list[Any]:
        return [
            rerank(batcher, cross_encoder, query, docs, raw=i == 1)
            for i, (query, docs) in enumerate(REQUESTS)
        ]

    with served(tiny_encoder, jobs) as (futures, stats):
        answers = [future.result(timeout=60) for future in futures]
    # predict once the worker is done: both would run the engine's OpenVINO requests ("busy")
    for i, ((query, docs), scores) in enumerate(zip(REQUESTS, answers)):
        expected = cross_encoder.predict([(query, d) for d in docs], apply_activation=i != 1)
        assert scores.dtype == np.float32 and scores.shape == (len(docs),)
        np.testing.assert_allclose(scores, expected, atol=1e-6, rtol=0)
    assert engine_calls == [7]  # three requests, seven pairs: one call (the code as landed: three)
    assert [(s.requests, s.sentences, s.kind) for s in stats] == [(3, 7, "pairs")]
    limit = cross_encoder.max_seq_length
    whole = cross_encoder.tokenizer(
        [q for q, docs in REQUESTS for _ in docs], [d for _, docs in REQUESTS for d in docs], verbose=False
    )["input_ids"]
    assert stats[0].tokens == sum(min(len(row), limit) for row in whole)


def test_a_long_pair_is_refused_with_truncate_false_and_its_batch_is_scored(
    tiny_encoder: SentenceEncoder, cross_encoder: CrossEncoder, engine_calls: list[int]
) -> None:
    def jobs(batcher: Batcher) -> list[Any]:
        return [
            rerank(batcher, cross_encoder, "music", ["rain", LONG], truncate=False),
            rerank(batcher, cross_encoder, "music", ["rain", "sun"], truncate=False),
            rerank(batcher, cross_encoder, "music", ["rain", LONG]),
        ]

    with served(tiny_encoder, jobs) as (futures, _):
        with pytest.raises(InputTooLong, match=r"input\[1\] has \d+ tokens.*limit of 64") as refused:
            futures[0].result(timeout=60)
        assert refused.value.index == 1
        answers = [futures[1].result(timeout=60), futures[2].result(timeout=60)]
    expected = cross_encoder.predict([("music", d) for d in ["rain", "sun", "rain", LONG]])
    np.testing.assert_allclose(answers[0], expected[:2], atol=1e-6, rtol=0)
    np.testing.assert_allclose(answers[1], expected[2:], atol=1e-6, rtol=0)
    assert engine_calls == [4]


class _PoisonedTokenizer:
    """The cross-encoder's tokenizer, failing on any call that holds the document ``poison``."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def __call__(self, first: Any, second: Any = None, **options: Any) -> Any:
        if second is not None and "poison" in second:
            raise RuntimeError("the tokenizer failed")
        return self.tokenizer(first, second, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tokenizer, name)


def test_a_request_whose_pairs_cannot_be_tokenized_fails_alone(
    tiny_encoder: SentenceEncoder, cross_encoder: CrossEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokenizer = cross_encoder.tokenizer
    expected = cross_encoder.predict([("music", "rain"), ("music", "sun")])
    monkeypatch.setattr(cross_encoder, "_tokenizer", _PoisonedTokenizer(tokenizer))

    def jobs(batcher: Batcher) -> list[Any]:
        return [rerank(batcher, cross_encoder, "music", docs) for docs in (["rain"], ["poison"], ["sun"])]

    with served(tiny_encoder, jobs) as (futures, stats):
        np.testing.assert_allclose(futures[0].result(timeout=60), expected[:1], atol=1e-6, rtol=0)
        with pytest.raises(RuntimeError, match="tokenizer failed"):
            futures[1].result(timeout=60)
        np.testing.assert_allclose(futures[2].result(timeout=60), expected[1:], atol=1e-6, rtol=0)
    assert [(s.requests, s.sentences) for s in stats] == [(2, 2)]


def test_pairs_and_texts_never_share_a_batch_and_merging_stops_at_the_target(
    tiny_encoder: SentenceEncoder, cross_encoder: CrossEncoder, engine_calls: list[int]
) -> None:
    def jobs(batcher: Batcher) -> list[Any]:
        return [
            rerank(batcher, cross_encoder, "q", ["a", "b"]),
            rerank(batcher, cross_encoder, "q", ["c"]),
            batcher.embed(["a text"]),
            rerank(batcher, cross_encoder, "q", ["d", "e"]),
            rerank(batcher, cross_encoder, "q", ["f"]),
        ]

    with served(tiny_encoder, jobs, BatchSettings(max_batch_size=3)) as (futures, stats):
        [future.result(timeout=60) for future in futures]
    assert [(s.kind, s.requests) for s in stats] == [("pairs", 2), ("embed", 1), ("pairs", 2)]
    assert engine_calls == [3, 3]


def test_under_a_token_budget_the_pairs_are_cut_in_arrival_order(
    tiny_encoder: SentenceEncoder,
    cross_encoder: CrossEncoder,
    engine_calls: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the GPU pipeline (here pretended) the requests are cut by tokens, as TEI's queue cuts them."""
    monkeypatch.setattr(pair_jobs, "on_gpu_pipeline", lambda model: True)
    documents = [["a man plays the guitar"], ["rain on the street", "sun"], ["the dog runs in the park"]]

    def jobs(batcher: Batcher) -> list[Any]:
        return [rerank(batcher, cross_encoder, "music", docs) for docs in documents]

    with served(tiny_encoder, jobs, BatchSettings(max_batch_tokens=20)) as (futures, _):
        scores = [future.result(timeout=60) for future in futures]
    # predict once the worker is done: both would run the engine's OpenVINO requests ("busy")
    for docs, got in zip(documents, scores):
        np.testing.assert_allclose(
            got, cross_encoder.predict([("music", d) for d in docs]), atol=1e-6, rtol=0
        )
    assert engine_calls == [1, 2, 1]  # 9, 8 + 5 and 10 tokens: each request that would pass 20 starts a batch


class _ThreadsOfTokenizer:
    """The cross-encoder's tokenizer, recording the thread of each call."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer, self.threads = tokenizer, list[str]()

    def __call__(self, *args: Any, **options: Any) -> Any:
        self.threads.append(threading.current_thread().name)
        return self.tokenizer(*args, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tokenizer, name)


def test_pairs_are_tokenized_on_arrival_not_on_the_worker(
    tiny_encoder: SentenceEncoder, cross_encoder: CrossEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a dense model's texts: the pool tokenizes each request when it is queued (lone surrogates
    replaced by the one retry), the worker only runs the model; scores stay predict's."""
    documents = [["a man plays the guitar", LONG], ["a\ud800b", "rain"]]
    expected = [
        cross_encoder.predict([("music", d) for d in docs]) for docs in (documents[0], ["a?b", "rain"])
    ]
    spy = _ThreadsOfTokenizer(cross_encoder.tokenizer)
    monkeypatch.setattr(cross_encoder, "_tokenizer", spy)

    def jobs(batcher: Batcher) -> list[Any]:
        return [rerank(batcher, cross_encoder, "music", docs) for docs in documents]

    with served(tiny_encoder, jobs) as (futures, stats):
        for future, scores in zip(futures, expected):
            np.testing.assert_allclose(future.result(timeout=60), scores, atol=1e-6, rtol=0)
    assert [(s.requests, s.sentences) for s in stats] == [(2, 4)]
    # whole, cut again for LONG; whole refused for the surrogate, then with it replaced
    assert len(spy.threads) == 4 and all(name.startswith("sbert-serve-tokens") for name in spy.threads), (
        spy.threads
    )
