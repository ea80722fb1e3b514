"""The model's forward passes in a process of their own (``sbert serve --engine-process``), so that
the engine does not share an interpreter lock with HTTP parsing, JSON and base64 answers.

In one process the batcher's worker thread (PyTorch's operator dispatch, pooling, collating: Python
work on a small model) takes turns with the event loop and the tokenizing threads on one
interpreter lock; every time the worker lets the lock go for a native call, a busy event loop may
keep it for up to the switch interval. With the 1-layer stand-in model at 64 clients × 32 sentences
on 2 cores, the worker took ~75% of the server's CPU, the event loop ~18% and tokenizing ~5%
(docs/benchmarks.md, "The server's CPU proxy"): the worker is what waits on the lock. Here the
server process keeps everything else (HTTP, validation, tokenizing on arrival, the batcher's queue
and metrics) and sends each merged batch's token ids to one engine process over a pipe; the engine
loads the same model (``load``: the command line's own loader, rerun there), runs
:meth:`~sbert.SentenceEncoder.encode_token_ids` and sends the vectors back. The contract is narrow:
token ids and :class:`~sbert.inference.runner.RunOptions` in, float32 vectors ``(n, dim)`` or an
error message out.

A batch that fails in the engine fails alone (the engine answers with the error and goes on). An
engine that dies (killed, out of memory) fails the batch it was running with
:class:`EngineDied`, a 500 (TEI's routes: 424) naming the exit, and a new engine is started at once;
the next batch waits for it to be ready. Nothing waits on a dead process: its end of the pipe closes
with it.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import numpy as np

from sbert.inference.runner import RunOptions

logger = logging.getLogger("sbert")
READY_TIMEOUT = 600.0  # seconds a new engine may take to load and warm its model


class EngineDied(RuntimeError):
    """The engine process exited while it held a batch (its requests fail; a new one is starting)."""


class EngineProcess:
    """One engine process that runs a model's forward passes for a server's batcher.

    Args:
        load: A picklable function without arguments that returns the model (the command line
            passes its own loader with the parsed options: the engine loads what the server loaded).

    :meth:`run` is called from one thread (the batcher's). The process is started on construction
    and again whenever it died; :meth:`close` stops it.

    Examples:
        >>> from functools import partial
        >>> from sbert import SentenceEncoder
        >>> engine = EngineProcess(partial(SentenceEncoder.from_pretrained, precision="float32"))  # doctest: +SKIP
        >>> engine.run([[101, 2023, 102]], RunOptions()).shape  # doctest: +SKIP
        (1, 384)
        >>> engine.close()  # doctest: +SKIP
    """

    def __init__(self, load: Callable[[], Any]) -> None:
        self.load = load
        self._context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None
        self._ready = False
        self._start()

    @property
    def pid(self) -> int | None:
        """The engine's process id (``None`` before it started)."""
        return self._process.pid if self._process is not None else None

    def wait_ready(self) -> None:
        """Wait until the engine has loaded its model (at start-up, so that no request waits for it).

        Raises:
            EngineDied: it exited while loading (the model failed to load there); a new one is started.
        """
        if self._ready:
            return
        assert self._connection is not None
        try:
            if not self._connection.poll(READY_TIMEOUT):
                raise EngineDied(f"the engine process did not load its model in {READY_TIMEOUT:.0f} s")
            message = self._connection.recv()
        except (EOFError, OSError):
            raise self._died("while loading its model") from None
        if message[0] == "error":
            self._stop()
            raise EngineDied(f"the engine process could not load the model: {message[1]}")
        self._ready = True

    def run(self, ids: Sequence[Sequence[int]], options: RunOptions) -> np.ndarray:
        """The vectors ``(n, dim)`` float32 of ``ids``, as ``model.encode_token_ids(ids, options)``
        gives them in the engine.

        Raises:
            EngineDied: the engine exited meanwhile (a new one is started).
            RuntimeError: the model raised in the engine (its type and message; the engine goes on).
        """
        self.wait_ready()
        assert self._connection is not None
        try:
            self._connection.send((list(ids), options))
            status, payload = self._connection.recv()
        except (EOFError, OSError):
            raise self._died("while encoding a batch") from None
        if status == "error":
            raise RuntimeError(f"the engine process failed on this batch: {payload}")
        vectors: np.ndarray = payload
        return vectors

    def close(self, timeout: float = 30.0) -> None:
        """Stop the engine: asked to exit once its batch is done, killed after ``timeout`` s."""
        if self._process is None:
            return
        try:
            assert self._connection is not None
            self._connection.send(None)
        except (OSError, ValueError):  # already gone
            pass
        self._process.join(timeout)
        self._stop()

    def _start(self) -> None:
        parent, child = self._context.Pipe()
        self._process = self._context.Process(
            target=_serve, args=(child, self.load), name="sbert-engine", daemon=True
        )
        self._process.start()
        child.close()  # the engine holds the only other end: its exit is an EOF here
        self._connection, self._ready = parent, False

    def _died(self, doing: str) -> EngineDied:
        """The error for the batch the dead engine held; a new engine is started meanwhile."""
        assert self._process is not None
        self._process.join(5)
        code = self._process.exitcode
        exit_text = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        logger.error(
            "the engine process (pid %s) died %s (%s); starting a new one", self.pid, doing, exit_text
        )
        self._stop()
        self._start()
        return EngineDied(f"the engine process died {doing} ({exit_text}); a new one is starting")

    def _stop(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        if self._connection is not None:
            self._connection.close()
        self._process, self._connection, self._ready = None, None, False


def _serve(connection: Connection, load: Callable[[], Any]) -> None:
    """The engine's loop: load the model, say ready, then answer each batch until told to stop or
    the server's end closes (the server exited)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the server's to handle
    try:
        model = load()
        model.encode(["A warm-up sentence."], show_progress_bar=False)
    except BaseException as error:
        connection.send(("error", f"{type(error).__name__}: {error}"))
        return
    connection.send(("ready", None))
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        ids, options = message
        started = time.perf_counter()
        try:
            vectors = model.encode_token_ids(ids, options).numpy()  # (n, dim) float32
        except Exception as error:
            connection.send(("error", f"{type(error).__name__}: {error}"))
            continue
        logger.debug("engine: %d sentences in %.1f ms", len(ids), 1000 * (time.perf_counter() - started))
        connection.send(("vectors", np.ascontiguousarray(vectors)))
