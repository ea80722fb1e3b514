"""What the batcher's queue holds and answers: the jobs (texts to embed, a call to run on the
worker, a job of another kind it merges: :class:`MergedJob`), each request's :class:`Embedded`
result, a merged batch's :class:`BatchStats`, and the errors a request can get from the queue."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from sbert.server.tokens import Ids


class Overloaded(RuntimeError):
    """The queue is full; ``retry_after`` is an estimate, in whole seconds, of when it has room."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InputTooLong(ValueError):
    """An input is longer than the model's limit and the caller asked not to truncate it."""

    def __init__(self, index: int, tokens: int, limit: int) -> None:
        super().__init__(
            f"input[{index}] has {tokens} tokens, more than the model's limit of {limit} "
            "(send truncate: true to cut it)"
        )
        self.index, self.tokens, self.limit = index, tokens, limit


class ServerClosed(RuntimeError):
    """The batcher is shutting down and takes no new work."""


@dataclass
class Embedded:
    """One request's result: its vectors and the token count of each input before truncation."""

    vectors: Any  # (n, dim) float32 in input order: an np.ndarray, or a sparse model's csr_matrix
    token_counts: list[int]  # special tokens included
    limit: int  # the model's max_seq_length

    @property
    def prompt_tokens(self) -> int:
        """Tokens the model read: each input counted up to the limit."""
        return sum(min(count, self.limit) for count in self.token_counts)

    @property
    def truncated(self) -> list[tuple[int, int]]:
        """``(index, tokens)`` of every input cut to the limit."""
        return [(i, count) for i, count in enumerate(self.token_counts) if count > self.limit]


@dataclass
class BatchStats:
    """One merged batch: requests, sentences, tokens read (each input up to the model's limit), time."""

    requests: int
    sentences: int
    tokens: int
    seconds: float
    kind: str = "embed"  # "embed" (texts to vectors), "pairs" (a cross-encoder's, server.pair_jobs)


@dataclass
class EmbedJob:
    """One request's texts to embed (/v1/embeddings, /embed, /embed_sparse...); the future holds its
    :class:`Embedded`."""

    texts: list[str]
    truncate: bool
    future: Future[Embedded]
    prompt: str  # put before each text ("": none); only jobs with the same prompt share a batch
    ids: Future[Ids] | None = None  # the texts' token ids, untruncated, tokenized on arrival (tokens.py)

    @property
    def items(self) -> int:
        return len(self.texts)

    @property
    def key(self) -> Any:
        return ("embed", self.prompt)  # only texts with the same prompt share a batch


@dataclass
class CallJob:
    """A function run on the worker's thread in queue order, alone (an index search)."""

    fn: Callable[[], Any]
    items: int
    future: Future[Any]


class MergedJob(Protocol):
    """A kind of job the worker merges as it merges texts (:mod:`sbert.server.pair_jobs`): queued jobs
    of one ``key`` are taken together, up to ``target`` items; ``run_merged`` answers their futures."""

    future: Future[Any]

    @property
    def items(self) -> int: ...

    @property
    def key(self) -> Any: ...

    # ``batcher``: the :class:`~sbert.server.batcher.Batcher` that took them (which imports this module)
    def target(self, batcher: Any) -> int: ...

    def run_merged(self, batcher: Any, jobs: list[Any]) -> None: ...
