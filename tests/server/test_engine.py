"""``--engine-process``: the forward passes in a process of their own give the vectors of ``encode()``;
a batch that fails there fails alone; a killed engine fails the batch it held, never hangs, and is
replaced; a server with it answers as without it and leaves no process behind."""

from __future__ import annotations

import os
import signal
import time
from functools import partial
from pathlib import Path

import httpx
import numpy as np
import psutil
import pytest
from engine_models import STALL, broken, stalling, tiny
from server_process import ServerProcess, tiny_server_args

from sbert import SentenceEncoder
from sbert.inference.runner import RunOptions
from sbert.server.batcher import Batcher
from sbert.server.engine import EngineDied, EngineProcess

TEXTS = ["a man plays the guitar", "the dog runs", "rain", "a child is eating food in the park"]


def test_a_batcher_with_an_engine_gives_the_vectors_of_encode_and_a_failing_batch_fails_alone(
    tiny_model_dir: Path,
) -> None:
    model = tiny(tiny_model_dir)
    engine = EngineProcess(partial(tiny, tiny_model_dir))
    bad = engine.submit([[1, 10**9, 2]], RunOptions())  # an id past the vocabulary
    with pytest.raises(RuntimeError, match="the engine process failed on this batch: IndexError"):
        bad.result(timeout=120)
    batcher = Batcher(model, engine=engine)  # the same engine goes on
    futures = [batcher.embed(TEXTS[:1]), batcher.embed(TEXTS[1:]), batcher.embed(TEXTS, prompt="query: ")]
    batcher.start()
    try:
        results = [future.result(timeout=120) for future in futures]
    finally:
        batcher.close()
    np.testing.assert_allclose(results[0].vectors, model.encode(TEXTS[:1]), atol=1e-6)
    np.testing.assert_allclose(results[1].vectors, model.encode(TEXTS[1:]), atol=1e-6)
    np.testing.assert_allclose(results[2].vectors, model.encode(TEXTS, prompt="query: "), atol=1e-6)
    assert engine.pid is not None and not psutil.pid_exists(engine.pid)  # closed with the batcher


def test_a_killed_engine_fails_its_batch_and_is_replaced(tiny_model_dir: Path) -> None:
    engine = EngineProcess(partial(stalling, tiny_model_dir))
    try:
        engine.wait_ready(300)
        first = engine.pid
        assert first is not None
        held = engine.submit([[1, STALL, 2]], RunOptions())  # the engine sits on it for 60 s
        time.sleep(0.5)
        os.kill(first, signal.SIGKILL)
        with pytest.raises(EngineDied, match="killed by signal 9"):
            held.result(timeout=30)  # not a hang: the engine's end of the pipe closed with it
        vectors = engine.submit([[1, 3, 2]], RunOptions()).result(timeout=120)
        assert vectors.shape[0] == 1
        assert engine.pid not in (None, first)
    finally:
        engine.close()


def test_an_engine_that_cannot_load_its_model_says_why(tiny_model_dir: Path) -> None:
    engine = EngineProcess(partial(broken, tiny_model_dir))
    try:
        with pytest.raises(EngineDied, match="could not load the model: OSError: .*no such model here"):
            engine.wait_ready(300)
        failed = engine.submit([[1, 2]], RunOptions())
        with pytest.raises(EngineDied, match="no such model here"):
            failed.result(timeout=10)
    finally:
        engine.close()


def engine_of(server: ServerProcess) -> psutil.Process:
    (child,) = psutil.Process(server.process.pid).children()
    return child


def test_a_server_with_an_engine_process_answers_as_encode_and_survives_a_killed_engine(
    tiny_model_dir: Path, tiny_encoder: SentenceEncoder
) -> None:
    server = ServerProcess(tiny_server_args(tiny_model_dir, "--engine-process")).wait_ready()
    try:
        first = engine_of(server)
        answer = httpx.post(f"{server.url}/v1/embeddings", json={"input": TEXTS}, timeout=60)
        assert answer.status_code == 200, answer.text
        vectors = np.array([item["embedding"] for item in answer.json()["data"]])
        np.testing.assert_allclose(vectors, tiny_encoder.encode(TEXTS), atol=1e-6)
        first.kill()
        first.wait(10)
        again = httpx.post(f"{server.url}/v1/embeddings", json={"input": TEXTS[:2]}, timeout=120)
        assert again.status_code == 200, again.text
        np.testing.assert_allclose(
            [item["embedding"] for item in again.json()["data"]], tiny_encoder.encode(TEXTS[:2]), atol=1e-6
        )
        second = engine_of(server)
        assert second.pid != first.pid
    finally:
        server.terminate()
        assert server.wait_exit() == 0
    assert not second.is_running()  # drained and stopped with the server, not left behind
