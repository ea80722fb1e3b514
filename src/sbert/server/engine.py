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

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from multiprocessing.connection import Connection
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
        in_flight: Batches sent and not yet answered, at most: 2, so that the engine has the next
            batch while the server reads the last one's vectors, and the batcher still merges
            the requests that arrive meanwhile (it waits in :meth:`submit` for a free place).

    The process is started on construction and again whenever it died; a thread of the server
    reads its answers in order and completes each batch's future. :meth:`close` stops it.

    Not run by the tests as a doctest: it starts a process that loads the bundled model
    (tests/server/test_engine.py starts one on a tiny model).

    Examples:
        >>> from functools import partial
        >>> from sbert import SentenceEncoder
        >>> engine = EngineProcess(partial(SentenceEncoder.from_pretrained, precision="float32"))  # doctest: +SKIP
        >>> engine.submit([[101, 2023, 102]], RunOptions()).result().shape  # doctest: +SKIP
        (1, 384)
        >>> engine.close()  # doctest: +SKIP
    """

    def __init__(self, load: Callable[[], Any], in_flight: int = 2) -> None:
        self.load = load
        self._places = threading.BoundedSemaphore(in_flight)
        self._lock = threading.Lock()  # the process, its pipe and the batches it holds
        self._pending: deque[Future[np.ndarray]] = deque()  # sent, in the order the engine answers
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self._ready = threading.Event()
        self._load_error: str | None = None
        self._closing = False
        self._start()

    @property
    def pid(self) -> int | None:
        """The engine's process id (``None`` while none runs)."""
        process = self._process
        return process.pid if process is not None else None

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until the engine has loaded its model (at start-up, so that no request waits for it).

        Raises:
            EngineDied: it did not load its model (the message says why).
        """
        if not self._ready.wait(timeout):
            raise EngineDied(f"the engine process did not load its model in {timeout:.0f} s")
        if self._load_error is not None:
            raise EngineDied(f"the engine process could not load the model: {self._load_error}")

    def wait_for_room(self) -> None:
        """Wait until fewer than ``in_flight`` batches are out: the batcher waits here before it takes
        the next requests, so that a batch holds every request that arrived while the engine was
        busy, not only those that came before it had room (:meth:`submit` then does not wait)."""
        with self._places:
            pass

    def submit(self, ids: Sequence[Sequence[int]], options: RunOptions) -> Future[np.ndarray]:
        """The vectors ``(n, dim)`` float32 of ``ids`` as ``model.encode_token_ids(ids, options)``
        gives them in the engine, in a future; waits while ``in_flight`` batches are out.

        The future's error: :class:`EngineDied` (the engine exited meanwhile; a new one is started),
        or a ``RuntimeError`` with the model's error (the engine goes on).
        """
        future: Future[np.ndarray] = Future()
        future.set_running_or_notify_cancel()
        self._places.acquire()
        future.add_done_callback(lambda _: self._places.release())
        try:
            self.wait_ready()
        except EngineDied as error:  # never sent
            future.set_exception(error)
            return future
        with self._lock, contextlib.suppress(OSError):  # a broken pipe: the reader fails the batch
            assert self._connection is not None
            self._pending.append(future)
            self._connection.send((list(ids), options))
        return future

    def close(self, timeout: float = 30.0) -> None:
        """Stop the engine once the batches sent are answered; killed after ``timeout`` s."""
        with self._lock:
            self._closing = True
            connection, process = self._connection, self._process
        if process is None or connection is None:
            return
        with contextlib.suppress(OSError):  # already gone
            connection.send(None)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def _start(self) -> None:
        """A new engine: a fresh interpreter (not a fork of this process and its threads, not
        multiprocessing's spawn, which imports the caller's main module again), the model's loader
        its first message."""
        ours, theirs = socket.socketpair()
        process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env={**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)},
        )
        theirs.close()  # the engine holds the only other end: its exit is an EOF here
        connection = Connection(ours.detach())
        connection.send(self.load)
        self._process, self._connection, self._load_error = process, connection, None
        self._ready.clear()
        threading.Thread(
            target=self._read, args=(process, connection), name="sbert-engine-reader", daemon=True
        ).start()

    def _read(self, process: subprocess.Popen[bytes], connection: Connection) -> None:
        """Answer the batches this process holds, in order, until it exits; then fail what it
        held and start the next (unless closing). An engine that cannot load its model is not
        started again: every batch then fails with the reason."""
        try:
            status, payload = connection.recv()
        except (EOFError, OSError):
            status, payload = "error", f"it exited while loading ({_exit_text(process)})"
        if status == "error":
            self._load_error = payload
            self._ready.set()
            return
        self._ready.set()
        try:
            while True:
                status, payload = connection.recv()
                with self._lock:
                    future = self._pending.popleft()
                if status == "error":
                    future.set_exception(RuntimeError(f"the engine process failed on this batch: {payload}"))
                else:
                    future.set_result(payload)
        except (EOFError, OSError):
            self._died(process, connection)

    def _died(self, process: subprocess.Popen[bytes], connection: Connection) -> None:
        exit_text = _exit_text(process)
        with self._lock:
            held, self._pending = list(self._pending), deque()
            connection.close()
            if not self._closing:
                logger.error(
                    "the engine process (pid %s) died (%s); starting a new one", process.pid, exit_text
                )
                self._start()
        for future in held:
            future.set_exception(
                EngineDied(f"the engine process died ({exit_text}) with this batch; a new one is starting")
            )


def _exit_text(process: subprocess.Popen[bytes]) -> str:
    """``killed by signal 9`` or ``exit status 1`` of a process that exited (waited for up to 5 s)."""
    try:
        code: int | None = process.wait(5)
    except subprocess.TimeoutExpired:
        code = None
    return f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"


_BOOT = "import sys; from sbert.server.engine import main; main(int(sys.argv[1]))"


def main(fd: int) -> None:
    """The engine process's entry: its end of the server's socket is file descriptor ``fd``."""
    connection = Connection(fd)
    try:
        load = connection.recv()
    except (EOFError, OSError):
        return
    _serve(connection, load)


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
