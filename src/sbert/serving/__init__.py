"""Serving sentence vectors to many callers at once: dynamic batching on one worker thread.

This layer knows nothing of HTTP; ``sbert.server`` is the HTTP shell over it.
"""

from sbert.serving.batcher import Batcher, BatchStats, Embedded, InputTooLong, Overloaded, ServerClosed

__all__ = ["BatchStats", "Batcher", "Embedded", "InputTooLong", "Overloaded", "ServerClosed"]
