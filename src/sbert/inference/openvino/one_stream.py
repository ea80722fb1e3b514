"""One OpenVINO stream over every thread, for calls with fewer forward passes than streams.

The engine compiles its graphs for throughput: one stream per thread, each pass on one core
(:func:`~sbert.inference.openvino.runtime.compile_config`). A call of one pass (a query, a few
sentences) then leaves the other cores idle: on a 2-core AVX2 CPU one STSb sentence took 14.5 ms
that way, 10 ms on one stream over both threads. So the float graph is compiled a second time with
OpenVINO's latency hint, read back from the graph cache (no conversion), proved like the first, and
such calls run there. It is built on the second such call, not the first: a one-off call (a
command line's) pays no second compile (about 0.5 s and the graph's size in memory again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sbert.inference.openvino.graph_cache import read_stored
from sbert.inference.openvino.runtime import import_openvino, keep_signal_stack

logger = logging.getLogger("sbert")

BUILT_ON_CALL = 2  # the under-filled call that compiles the one-stream graph


class OneStream:
    """The requests an engine's call runs on: its throughput requests, or, for a call of fewer
    passes than they are, one request of the same graph compiled on one stream over every thread.

    Args:
        graph_key: The graph's key in the graph cache (``None``: not cached; never one stream).
        config: The throughput compile's settings (precision, threads).
        threads: Its threads: with one, one stream is what runs anyway.
        prove: Raises where requests of the graph give other vectors than the reference.
    """

    def __init__(
        self,
        graph_key: str | None,
        config: dict[str, object],
        threads: int,
        prove: Callable[[list[Any]], None],
    ) -> None:
        self.graph_key, self.config, self.threads, self.prove = graph_key, config, threads, prove
        self.requests: list[Any] | None = None
        self.short_calls = 0
        self.failed = False

    def for_call(self, throughput: list[Any], passes: int) -> list[Any]:
        """The requests a call of ``passes`` forward passes runs on."""
        if passes >= len(throughput) or self.threads < 2:
            return throughput
        if self.requests is None and not self.failed:
            self.short_calls += 1
            if self.short_calls >= BUILT_ON_CALL:
                self._build()
        return self.requests or throughput

    def _build(self) -> None:
        model = read_stored(self.graph_key) if self.graph_key is not None else None
        if model is None:  # the cache is off or was emptied: the throughput graph serves
            self.failed = True
            return
        config = {**self.config, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
        try:
            with keep_signal_stack():  # as every OpenVINO call of the engine (runtime.keep_signal_stack)
                compiled = import_openvino().Core().compile_model(model, "CPU", config)
                requests = [compiled.create_infer_request()]
            self.prove(requests)
        except Exception as error:  # an unfaithful or failed compile: the proved graph serves
            logger.debug("no one-stream OpenVINO graph (%s)", error)
            self.failed = True
            return
        self.requests = requests
