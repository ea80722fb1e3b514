"""How a training run is asked to stop: Ctrl-C asks for a checkpoint after the current step (a second
Ctrl-C aborts at once); under torchrun, SIGTERM means another process of the run ended and the agent
stops this one.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

logger = logging.getLogger("sbert")


class StopSignals:
    """A run's handlers of SIGINT and (under torchrun) SIGTERM, from :meth:`install` to :meth:`restore`.

    Args:
        peer_error: Under torchrun, the error SIGTERM raises, made from its cause; ``None`` for a
            single process, where SIGTERM is left alone.

    Attributes:
        requested: Whether a stop was asked for; the trainer checkpoints after the step and returns.

    Examples:
        >>> import os, signal
        >>> stop = StopSignals()
        >>> stop.install()
        >>> os.kill(os.getpid(), signal.SIGINT)
        >>> stop.requested
        True
        >>> stop.restore()
    """

    def __init__(self, peer_error: Callable[[str], BaseException] | None = None) -> None:
        self.requested = False
        self._peer_error = peer_error
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Clear :attr:`requested` and put the handlers in place (in the main thread only: elsewhere
        the signals are left alone)."""
        self.requested = False
        handlers = {signal.SIGINT: self._request_stop}
        if self._peer_error is not None:
            handlers[signal.SIGTERM] = self._peer_lost
        try:
            self._previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
        except ValueError:  # not the main thread
            self._previous = {}

    def restore(self) -> None:
        """Put back the handlers :meth:`install` replaced."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if self._peer_error is None:  # under torchrun a second SIGINT comes from the agent, not the user
            logger.warning("Ctrl-C: saving a checkpoint after this step (press again to abort at once)")
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def _peer_lost(self, signum: int, frame: FrameType | None) -> None:
        assert self._peer_error is not None
        raise self._peer_error("another process of the run ended and torchrun stopped this one")
