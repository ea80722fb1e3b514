"""The batcher in-process: merged jobs get their own rows, a full queue refuses, the worker survives."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.server.batcher import Batcher, BatchStats, InputTooLong, Overloaded, ServerClosed
from sbert.server.run import build_service
from sbert.server.scoring import cosine_scores, ranked
from sbert.server.serving_plan import CPU_TAKE_PASSES
from sbert.server.settings import BatchSettings, ServeOptions

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
            assert result.token_counts == [len(ids) for ids in tiny_encoder.token_ids(texts).ids]
    finally:
        batcher.close()
    assert [(s.requests, s.sentences) for s in stats] == [(3, 5)]
    assert stats[0].tokens == sum(
        len(ids) for ids in tiny_encoder.token_ids([t for job in JOBS for t in job]).ids
    )


def test_under_load_a_batch_waits_briefly_for_the_clients_just_answered(
    tiny_encoder: SentenceEncoder,
) -> None:
    stats: list[BatchStats] = []
    batcher = Batcher(tiny_encoder, BatchSettings(batch_wait_ms=2000), on_batch=stats.append)
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


def test_under_load_a_batch_waits_for_the_requests_the_server_holds(tiny_encoder: SentenceEncoder) -> None:
    stats: list[BatchStats] = []
    held = [0]  # the server's requests in flight
    batcher = Batcher(
        tiny_encoder, BatchSettings(batch_wait_ms=2000), on_batch=stats.append, in_flight=lambda: held[0]
    )
    first = [batcher.embed([text]) for text in ("a", "b")]  # under load: a batch of two
    batcher.start()
    try:
        [future.result(timeout=30) for future in first]
        held[0] = 4  # four requests held: two arrive now, two a little later (a second cohort)
        second = [batcher.embed(["c"]), batcher.embed(["d"])]
        time.sleep(0.1)
        second += [batcher.embed(["e"]), batcher.embed(["f"])]
        [future.result(timeout=30) for future in second]
    finally:
        batcher.close()
    assert [s.requests for s in stats] == [2, 4]  # not [2, 2, 2]


def test_by_default_no_batch_waits_for_company(tiny_encoder: SentenceEncoder) -> None:
    """Under load (batches of three, many requests held) a batch is what is queued when the model is
    free: the worker never waits with a timeout for more (it did, 5 ms, before issue 53)."""
    stats: list[BatchStats] = []
    batcher = Batcher(tiny_encoder, on_batch=stats.append, in_flight=lambda: 64)
    waits: list[float | None] = []
    wait = batcher._cond.wait

    def recorded(timeout: float | None = None) -> bool:
        waits.append(timeout)
        return wait(timeout)

    batcher._cond.wait = recorded  # type: ignore[method-assign]
    first = [batcher.embed([text]) for text in ("a", "b", "c")]  # one batch of three requests
    batcher.start()
    try:
        [future.result(timeout=30) for future in first]
        [batcher.embed([text]).result(timeout=30) for text in ("d", "e")]  # one at a time
    finally:
        batcher.close()
    assert [s.requests for s in stats] == [3, 1, 1]
    assert [timeout for timeout in waits if timeout is not None] == []


def test_a_pytorch_model_is_served_in_the_batches_encode_cuts(tiny_encoder: SentenceEncoder) -> None:
    """On PyTorch the server's batches are encode()'s (max_batch_size sentences), not cut by
    OpenVINO's cost per pass (24 tokens: a 32-sentence request ran in several passes)."""
    service = build_service(tiny_encoder, ServeOptions())
    assert service.batcher.batch_cost_tokens is None
    texts = [f"sentence number {i} " + "word " * (i % 13) for i in range(32)]
    service.batcher.start()
    try:
        vectors = service.batcher.embed(texts).result(timeout=60).vectors
    finally:
        service.batcher.close()
    np.testing.assert_allclose(vectors, tiny_encoder.encode(texts), atol=1e-6)


def test_merging_stops_at_the_batch_target(tiny_encoder: SentenceEncoder) -> None:
    stats: list[BatchStats] = []
    batcher = Batcher(tiny_encoder, BatchSettings(max_batch_size=2), on_batch=stats.append)
    target = 2 * CPU_TAKE_PASSES  # sentences one take merges: several passes' worth
    futures = [batcher.embed([f"sentence {i}"]) for i in range(target + 3)]
    batcher.start()
    [future.result(timeout=30) for future in futures]
    batcher.close()
    assert [s.sentences for s in stats] == [target, 3]


def test_requests_of_a_pass_each_merge_and_are_cut_by_length_as_encode_cuts_them(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 clients × 32 sentences on PyTorch: a take of one request a pass ran each request as it
    arrived, padded to its longest sentence (the STSb test set: 1.71× the real tokens, against
    encode()'s 1.02×). Queued requests of a full pass each now go to encode() together, which sorts
    them by length: here two passes of equal lengths, not four of mixed ones."""
    passes: list[list[int]] = []
    collate = tiny_encoder.input_module.collate

    def recorded(ids: list[list[int]]) -> object:
        passes.append(sorted(len(row) for row in ids))
        return collate(ids)

    short, long = "rain", "a child is eating food in the park with his dog"
    jobs = [[short, long] * 2, [long, short] * 2, [short, short, long, long], [long, long, short, short]]
    expected = [tiny_encoder.encode(texts) for texts in jobs]
    monkeypatch.setattr(tiny_encoder.input_module, "collate", recorded)
    stats: list[BatchStats] = []
    batcher = Batcher(
        tiny_encoder, BatchSettings(max_batch_size=4), on_batch=stats.append, batch_cost_tokens=None
    )
    futures = [batcher.embed(texts) for texts in jobs]  # queued before the worker starts
    batcher.start()
    try:
        for vectors, future in zip(expected, futures):
            np.testing.assert_allclose(future.result(timeout=30).vectors, vectors, atol=1e-6)
    finally:
        batcher.close()
    assert [(s.requests, s.sentences) for s in stats] == [(4, 16)]
    assert [len(set(lengths)) for lengths in passes] == [1, 1, 1, 1]  # every pass one length: no padding


def test_full_queue_raises_overloaded_and_close_refuses(tiny_encoder: SentenceEncoder) -> None:
    batcher = Batcher(tiny_encoder, BatchSettings(max_queued_items=3))
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
    batcher = Batcher(tiny_encoder, BatchSettings(max_queued_items=2))
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


def test_a_job_whose_texts_cannot_be_counted_fails_alone(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tiny_encoder.input_module
    whole = module.whole_token_ids

    def failing(texts: list[str]) -> object:
        if "poison" in texts:
            raise RuntimeError("the tokenizer failed")
        return whole(texts)

    # Each request is tokenized on its own as it arrives (sbert.server.tokens).
    monkeypatch.setattr(module, "whole_token_ids", failing)
    batcher = Batcher(tiny_encoder)
    futures = [batcher.embed(["fine"]), batcher.embed(["poison"]), batcher.embed(["also fine"])]
    batcher.start()  # the three merge; only the poisoned one fails
    try:
        np.testing.assert_allclose(
            futures[0].result(timeout=30).vectors, tiny_encoder.encode(["fine"]), atol=1e-6
        )
        with pytest.raises(RuntimeError, match="tokenizer failed"):
            futures[1].result(timeout=30)
        assert futures[2].result(timeout=30).token_counts == [
            len(tiny_encoder.token_ids(["also fine"]).ids[0])
        ]
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
        BatchSettings(max_batch_tokens=0)
    with pytest.raises(ValueError, match="batch_wait_ms"):
        BatchSettings(batch_wait_ms=-1)
    assert cosine_scores(np.array([1.0, 0.0]), np.array([[2.0, 0.0], [0.0, 3.0]])).tolist() == [1.0, 0.0]
    assert [(i, float(s)) for i, s in ranked(np.array([0.2, 0.9, 0.2]))] == [(1, 0.9), (0, 0.2), (2, 0.2)]


def test_jobs_with_different_prompts_never_share_a_batch(tiny_encoder: SentenceEncoder) -> None:
    stats: list[BatchStats] = []
    batcher = Batcher(tiny_encoder, on_batch=stats.append)
    prompts = ["", "query: ", "query: ", ""]
    futures = [batcher.embed(["the dog runs", "rain"], prompt=prompt) for prompt in prompts]
    batcher.start()
    try:
        for prompt, future in zip(prompts, futures):
            expected = tiny_encoder.encode(["the dog runs", "rain"], prompt=prompt)
            np.testing.assert_allclose(future.result(timeout=30).vectors, expected, atol=1e-6)
    finally:
        batcher.close()
    assert [s.requests for s in stats] == [1, 2, 1]  # the two query jobs merged, nothing else
