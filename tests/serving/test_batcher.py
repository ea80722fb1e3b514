"""The batcher in-process: merged jobs get their own rows, a full queue refuses, the worker survives."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.batching import BATCH_COST_TOKENS, length_sorted_batches
from sbert.serving import Batcher, BatchStats, InputTooLong, Overloaded, ServerClosed
from sbert.serving.scoring import cosine_scores, ranked

JOBS = [["a man plays the guitar"], ["the dog runs", "rain", "a child is eating food in the park"], ["sun"]]


def test_queued_jobs_merge_into_one_batch_and_get_their_own_rows(tiny_encoder: SentenceEncoder) -> None:
    stats: list[BatchStats] = []
    batcher = Batcher(tiny_encoder, parallel_batches=2, on_batch=stats.append)
    futures = [batcher.embed(texts) for texts in JOBS]  # queued before the worker starts
    assert batcher.queued_items == 5
    batcher.start()
    try:
        for texts, future in zip(JOBS, futures):
            result = future.result(timeout=30)
            np.testing.assert_allclose(result.vectors, tiny_encoder.encode(texts), atol=1e-6)
            assert result.token_counts == [len(ids) for ids in tiny_encoder.tokenize(texts).ids]
    finally:
        batcher.close()
    assert [(s.requests, s.sentences) for s in stats] == [(3, 5)]
    lengths = sorted(
        (len(ids) for ids in tiny_encoder.tokenize([t for job in JOBS for t in job]).ids), reverse=True
    )
    # At most 3 a pass (5 sentences over 2 parallel passes), cut where padding plus BATCH_COST_TOKENS a pass
    # is least: never more padded tokens than two sorted passes of 3 and 2.
    cheapest = length_sorted_batches(
        lengths, 3, batcher.max_batch_tokens, batch_cost_tokens=BATCH_COST_TOKENS
    )
    assert stats[0].padded_tokens == sum(len(b) * lengths[b[0]] for b in cheapest)
    assert stats[0].padded_tokens <= 3 * lengths[0] + 2 * lengths[3]


def test_under_load_a_batch_waits_briefly_for_the_clients_just_answered(
    tiny_encoder: SentenceEncoder,
) -> None:
    stats: list[BatchStats] = []
    batcher = Batcher(tiny_encoder, on_batch=stats.append, max_wait=2.0)
    first = [batcher.embed([text]) for text in ("a", "b", "c")]  # one batch of three requests
    batcher.start()
    try:
        [future.result(timeout=30) for future in first]
        second = [batcher.embed(["d"])]
        time.sleep(0.1)  # the other two clients come back a little later
        second += [batcher.embed(["e"]), batcher.embed(["f"])]
        [future.result(timeout=30) for future in second]
    finally:
        batcher.close()
    assert [s.requests for s in stats] == [3, 3]


def test_merging_stops_at_the_batch_target(tiny_encoder: SentenceEncoder) -> None:
    stats: list[BatchStats] = []
    batcher = Batcher(tiny_encoder, max_batch_size=2, on_batch=stats.append)
    futures = [batcher.embed([f"sentence {i}"]) for i in range(5)]
    batcher.start()
    [future.result(timeout=30) for future in futures]
    batcher.close()
    assert [s.sentences for s in stats] == [2, 2, 1]


def test_full_queue_raises_overloaded_and_close_refuses(tiny_encoder: SentenceEncoder) -> None:
    batcher = Batcher(tiny_encoder, max_queued_items=3)
    first = batcher.embed(["a", "b"])
    with pytest.raises(Overloaded) as refused:
        batcher.embed(["c", "d"])
    assert refused.value.retry_after >= 1 and "3" in str(refused.value)
    batcher.embed(["c"])  # still room for one
    batcher.start()
    batcher.close()
    assert first.result(timeout=1).vectors.shape == (2, 32)  # queued work finished before the worker stopped
    with pytest.raises(ServerClosed):
        batcher.embed(["e"])


def test_a_request_larger_than_the_queue_runs_when_the_queue_is_empty(tiny_encoder: SentenceEncoder) -> None:
    batcher = Batcher(tiny_encoder, max_queued_items=2)
    future = batcher.embed(["a", "b", "c", "d"])
    batcher.start()
    assert future.result(timeout=30).vectors.shape == (4, 32)
    batcher.close()


def test_truncation_counted_or_refused_per_job(tiny_encoder: SentenceEncoder) -> None:
    long = " ".join(["music"] * 100)
    batcher = Batcher(tiny_encoder)
    kept = batcher.embed(["rain", long])
    refused = batcher.embed(["rain", long], truncate=False)
    other = batcher.embed(["sun"], truncate=False)
    batcher.start()
    try:
        assert kept.result(timeout=30).truncated == [(1, 102)]
        assert kept.result().prompt_tokens == 3 + 64
        with pytest.raises(InputTooLong, match=r"input\[1\] has 102 tokens.*limit of 64"):
            refused.result(timeout=30)
        assert other.result(timeout=30).vectors.shape == (1, 32)  # merged with the refused job, unharmed
    finally:
        batcher.close()


def test_calls_run_on_the_worker_thread_and_errors_do_not_kill_it(tiny_encoder: SentenceEncoder) -> None:
    batcher = Batcher(tiny_encoder)
    batcher.start()
    try:
        assert batcher.call(lambda: threading.current_thread().name).result(timeout=30) == "sbert-batcher"
        with pytest.raises(ZeroDivisionError):
            batcher.call(lambda: 1 / 0).result(timeout=30)
        assert batcher.embed(["still alive"]).result(timeout=30).vectors.shape == (1, 32)
    finally:
        batcher.close()


def test_bad_arguments_and_scores() -> None:
    with pytest.raises(ValueError, match="max_batch_tokens"):
        Batcher(object(), max_batch_tokens=0)
    assert cosine_scores(np.array([1.0, 0.0]), np.array([[2.0, 0.0], [0.0, 3.0]])) == [1.0, 0.0]
    assert ranked([0.2, 0.9, 0.2]) == [(1, 0.9), (0, 0.2), (2, 0.2)]
