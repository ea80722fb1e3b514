"""What every runner is: token ids → pooled sentence vectors, batched as one ``encode()`` call asks.

The contract on its own floor, so the CPU runners (:mod:`sbert.inference.runners`) and the GPU
pipeline (:mod:`sbert.inference.cuda.pipeline`) both import it and neither imports the other's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from torch import Tensor


@dataclass(frozen=True)
class RunOptions:
    """How one ``encode()`` call batches (see :meth:`~sbert.SentenceEncoder.encode`)."""

    batch_size: int = 32
    max_tokens: int | None = None
    batch_cost_tokens: int | None = None
    pack: bool = False
    prompt_length: int = 0  # tokens of the prompt (pooling may leave them out)


class Runner(Protocol):
    """Token ids → pooled sentence vectors ``(n, dim)`` in input order, float32 on the CPU, after the
    layers after pooling; ``progress`` is told how many sentences each batch finished."""

    def run(
        self, ids: Sequence[Sequence[int]], options: RunOptions, progress: Callable[[int], None]
    ) -> Tensor: ...
