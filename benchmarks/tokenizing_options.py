"""Ways to tokenize texts on the host for the GPU pipeline, each measurable alone (issue 43).

On a 16-core H200 host the pipeline's way (a chunk cut into one piece per thread, one shared
tokenizer copy, ``TOKENIZERS_PARALLELISM`` as the user left it) ran 105,899 sentences/s on 8 threads,
slower than one Python call (135,669), where the forward pass alone runs 188,429. The options:

- ``rust_parallel``: one call per chunk of 4,096 on one Python thread; the Rust tokenizer spreads
  it over its own thread pool (rayon, every core) with ``TOKENIZERS_PARALLELISM=true``.
- ``one_call_serial``: the same call with ``TOKENIZERS_PARALLELISM=false``: one core.
- ``pieces_threads``: the pipeline's way until 2026-11-27: each chunk cut into one piece per Python
  thread, all on one shared copy, ``TOKENIZERS_PARALLELISM=false``.
- ``pieces_copies_threads``: the pipeline's way since: the same pieces, each thread encoding with its
  own copy (``sbert.modules.batch_tokenizer.ThreadTokenizers``), ``TOKENIZERS_PARALLELISM=false``.
- ``tei_threads``: text-embeddings-inference's way: N Python threads, each with its own copy of the
  tokenizer, fed pieces of 256 texts through a bounded queue, ``TOKENIZERS_PARALLELISM=false``.
- ``processes``: N processes (spawned once), each with its own tokenizer, sending back flat int32
  arrays; what turning those into the pipeline's batches would cost is not included.

Each returns the ids of every text, checked against one reference call by the callers.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import numpy as np

CHUNK = 4096  # texts a chunk, as the pipeline (sbert.inference.cuda.pipeline.TOKENIZE_CHUNK)
TEI_PIECE = 256

Ids = list[list[int]]


@contextlib.contextmanager
def parallelism(on: bool) -> Iterator[None]:
    """``TOKENIZERS_PARALLELISM`` for the block (the Rust library reads it at each batch call)."""
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if on else "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = before


def options(
    backend: Any, texts: Sequence[str], threads: int
) -> tuple[dict[str, Callable[[], Ids]], Callable[[], None]]:
    """Each way, as a call that tokenizes ``texts`` (``backend``: a ``tokenizers.Tokenizer``
    configured for the model: truncation on, no padding), and a call that ends their pools. Pools
    are made here, once, as a pipeline would."""
    encode = getattr(backend, "encode_batch_fast", backend.encode_batch)

    def chunks() -> Iterator[list[str]]:
        for start in range(0, len(texts), CHUNK):
            yield list(texts[start : start + CHUNK])

    def one_call(on: bool) -> Callable[[], Ids]:
        def run() -> Ids:
            with parallelism(on):
                return [e.ids for chunk in chunks() for e in encode(chunk, add_special_tokens=True)]

        return run

    pool = ThreadPoolExecutor(threads, thread_name_prefix="pieces")

    def pieces() -> Ids:
        size = -(-CHUNK // threads)
        out: Ids = []
        with parallelism(False):
            for chunk in chunks():
                parts = [chunk[s : s + size] for s in range(0, len(chunk), size)]
                for encoded in pool.map(lambda part: encode(part, add_special_tokens=True), parts):
                    out.extend(e.ids for e in encoded)
        return out

    local = threading.local()

    def own_copy() -> Any:
        import copy

        if not hasattr(local, "encode"):
            mine = copy.deepcopy(backend)
            local.encode = getattr(mine, "encode_batch_fast", mine.encode_batch)
        return local.encode

    def pieces_copies() -> Ids:
        size = -(-CHUNK // threads)
        out: Ids = []
        with parallelism(False):
            for chunk in chunks():
                parts = [chunk[s : s + size] for s in range(0, len(chunk), size)]
                for encoded in pool.map(lambda part: own_copy()(part, add_special_tokens=True), parts):
                    out.extend(e.ids for e in encoded)
        return out

    tei = TeiTokenizers(backend, threads)
    processes = ProcessTokenizers(backend.to_str(), threads)
    ways = {
        "rust_parallel": one_call(True),
        "one_call_serial": one_call(False),
        f"pieces_{threads}_threads": pieces,
        f"pieces_copies_{threads}_threads": pieces_copies,
        f"tei_{threads}_threads": lambda: tei(texts),
        f"processes_{threads}": lambda: processes(texts),
    }

    def close() -> None:
        pool.shutdown()
        tei.close()
        processes.close()

    return ways, close


def measure(
    tokenizer: Any, max_length: int, texts: Sequence[str], threads: int, repeats: int
) -> dict[str, float]:
    """Sentences/s of each way (median of ``repeats``, alternating), each checked to give the ids of
    one serial call."""
    import statistics

    from alternating import alternating_rates

    ways, close = options(configured(tokenizer, max_length), texts, threads)
    try:
        expected = ways["one_call_serial"]()
        for name, way in ways.items():
            got = way()
            if len(got) != len(expected) or any(list(g) != e for g, e in zip(got, expected, strict=True)):
                raise AssertionError(f"tokenizing option {name} gave other ids than one serial call")
        rates = alternating_rates(dict(ways), repeats, len(texts))
    finally:
        close()
    return {f"tokenize_{name}": statistics.median(rate) for name, rate in rates.items()}


class TeiTokenizers:
    """N threads, a tokenizer copy each, fed by a bounded queue (text-embeddings-inference's way)."""

    def __init__(self, backend: Any, threads: int) -> None:
        import copy

        self.texts: Sequence[str] = []
        self.work: queue.Queue[tuple[int, int] | None] = queue.Queue(maxsize=2 * threads)
        self.results: dict[int, Ids] = {}
        self.done = threading.Semaphore(0)
        self.threads = [
            threading.Thread(target=self._worker, args=(copy.deepcopy(backend),), daemon=True)
            for _ in range(threads)
        ]
        for thread in self.threads:
            thread.start()

    def _worker(self, backend: Any) -> None:
        encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
        while (item := self.work.get()) is not None:
            start, stop = item
            self.results[start] = [
                e.ids for e in encode(list(self.texts[start:stop]), add_special_tokens=True)
            ]
            self.done.release()

    def __call__(self, texts: Sequence[str]) -> Ids:
        self.texts, self.results = texts, {}
        starts = range(0, len(self.texts), TEI_PIECE)
        with parallelism(False):
            for start in starts:
                self.work.put((start, min(start + TEI_PIECE, len(self.texts))))
            for _ in starts:
                self.done.acquire()
        return [ids for start in starts for ids in self.results[start]]

    def close(self) -> None:
        for _ in self.threads:
            self.work.put(None)


_process_backend: Any = None


def _load(serialized: str) -> None:
    global _process_backend
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer

    _process_backend = Tokenizer.from_str(serialized)


def _encode_flat(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = _process_backend.encode_batch(texts, add_special_tokens=True)
    lengths = np.fromiter((len(e.ids) for e in encoded), np.int32, len(encoded))
    flat = np.fromiter((i for e in encoded for i in e.ids), np.int32, int(lengths.sum()))
    return flat, lengths


class ProcessTokenizers:
    """N spawned processes, a tokenizer each; pieces out, flat int32 arrays back."""

    def __init__(self, serialized: str, processes: int) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(processes, context, initializer=_load, initargs=(serialized,))
        self.processes = processes

    def __call__(self, texts: Sequence[str]) -> Ids:
        size = max(1, -(-CHUNK // self.processes))
        pieces = [list(texts[s : s + size]) for s in range(0, len(texts), size)]
        out: Ids = []
        for flat, lengths in self.pool.map(_encode_flat, pieces):
            out.extend(np.split(flat, np.cumsum(lengths)[:-1]))  # type: ignore[arg-type]
        return out

    def close(self) -> None:
        self.pool.shutdown()


def configured(tokenizer: Any, max_length: int) -> Any:
    """The model's Rust tokenizer, configured as sbert's BatchTokenizer configures its copy."""
    from sbert.modules.batch_tokenizer import BatchTokenizer

    return BatchTokenizer(tokenizer, max_length).backend
