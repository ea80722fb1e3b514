"""The batcher's bounded queue and what it merges: which queued jobs one take of the worker gets.

The worker takes the oldest job and every job of the same kind and key queued behind it (texts with
the same prompt; one cross-encoder's pairs), up to the take's target; a call
(:meth:`~sbert.server.batcher.Batcher.call`) is taken alone. No take waits for company by default:
the requests that arrive while one merged batch runs form the next, taken as soon as the engine is
free (text-embeddings-inference's queue). With ``batch_wait_ms`` set, a take under load (the last
one merged n requests) waits at most that long for n, or for every request the server holds if more.
A full queue raises :class:`~sbert.server.jobs.Overloaded` at once (with a retry estimate), never
blocking the caller.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from sbert.server.jobs import BatchStats, CallJob, EmbedJob, MergedJob, Overloaded, ServerClosed
from sbert.server.settings import BatchSettings


class JobQueue:
    """The queue a :class:`~sbert.server.batcher.Batcher`'s worker takes its work from.

    Args:
        settings: The queue bound (``max_queued_items``), the wait under load (``batch_wait_ms``).
        in_flight: The requests the server holds (queued, running or being answered); under
            load a take waits up to ``settings.batch_wait_ms`` for that many.
        on_batch: Called after every merged batch (for metrics).
    """

    def __init__(
        self,
        settings: BatchSettings,
        in_flight: Callable[[], int] = lambda: 0,
        on_batch: Callable[[BatchStats], None] | None = None,
    ) -> None:
        self.settings = settings
        self.in_flight = in_flight
        self.on_batch = on_batch
        self._queue: deque[EmbedJob | CallJob | MergedJob] = deque()
        self._queued_items = 0
        self._closing = False
        self._cond = threading.Condition()
        self._rate = 0.0  # sentences per second, a moving average, for Retry-After
        self._last_requests = 0  # requests merged into the last batch

    def _target(self, first: EmbedJob | MergedJob) -> int:
        """Most items a take that starts with ``first`` merges (the batcher's engine decides)."""
        raise NotImplementedError

    @property
    def queued_items(self) -> int:
        """Sentences (and pairs) waiting, not yet taken by the worker."""
        return self._queued_items

    def retry_after(self) -> int:
        """Whole seconds until the queue has likely drained (at least 1)."""
        if self._rate <= 0:
            return 1
        return max(1, math.ceil(self._queued_items / self._rate))

    def _put(self, job: EmbedJob | CallJob | MergedJob) -> None:
        with self._cond:
            if self._closing:
                raise ServerClosed("the server is shutting down")
            if self._queued_items and self._queued_items + job.items > self.settings.max_queued_items:
                raise Overloaded(
                    f"the queue is full ({self._queued_items} of {self.settings.max_queued_items} items waiting)",
                    self.retry_after(),
                )
            self._queue.append(job)
            self._queued_items += job.items
            self._cond.notify()

    def _take(self) -> list[Any] | CallJob | None:
        """The next unit of work: a call, or jobs of one kind and key merged up to the batch target."""
        with self._cond:
            while not self._queue and not self._closing:
                self._cond.wait()
            if not self._queue:
                return None
            first = self._queue.popleft()
            self._queued_items -= first.items
            if isinstance(first, CallJob):
                return first
            jobs, items = [first], first.items
            target = self._target(first)
            deadline = time.monotonic() + self._wait_seconds()
            while True:
                while self._queue and not isinstance(nxt := self._queue[0], CallJob) and nxt.key == first.key:
                    if items + nxt.items > target:
                        break
                    self._queue.popleft()
                    self._queued_items -= nxt.items
                    jobs.append(nxt)
                    items += nxt.items
                remaining = deadline - time.monotonic()
                if self._queue or self._closing or len(jobs) >= self._wanted() or remaining <= 0:
                    break
                self._cond.wait(remaining)
            self._last_requests = len(jobs)
            return jobs

    def _wait_seconds(self) -> float:
        """How long this take may wait for company: never by default (``batch_wait_ms`` 0, as
        text-embeddings-inference's queue: the next batch is whatever is queued when the engine is
        free); with ``batch_wait_ms`` set, at most that long, and only under load (the last batch
        merged several requests), since the clients it answered are about to send again."""
        return self.settings.batch_wait_ms / 1000 if self._last_requests > 1 else 0.0

    def _wanted(self) -> int:
        """The requests a waiting take waits for: as many as the last batch merged, or every
        request the server holds, if more (without the second, 64 closed-loop clients could settle
        into two cohorts, one computing while the other was answered, in batches of half the size)."""
        return max(self._last_requests, self.in_flight()) if self._last_requests > 1 else 1

    def finished(self, stats: BatchStats) -> None:
        """A merged batch is done: its rate feeds Retry-After, its stats the metrics."""
        rate = stats.sentences / max(stats.seconds, 1e-6)
        self._rate = rate if self._rate == 0 else 0.8 * self._rate + 0.2 * rate
        if self.on_batch is not None:
            self.on_batch(stats)
