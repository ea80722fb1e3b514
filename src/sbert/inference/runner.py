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
    """How one ``encode()`` call batches (see :meth:`~sbert.SentenceEncoder.encode`).

    Attributes:
        batch_size: Sentences per forward pass.
        max_tokens: A cap on padded tokens (sentences × longest) per batch, on top of
            ``batch_size``: batches of long texts shrink, bounding memory. ``None``: no cap.
        batch_cost_tokens: What one forward pass costs beyond its padded tokens, in tokens: batches
            are then cut to minimise padded tokens plus this per batch (helps many small calls of
            mixed lengths on a CPU, where 24 fits; ``sbert serve`` uses it). ``None``: batches of
            ``batch_size``.
        pack: Put several sentences in one row of a forward pass instead of padding each to the
            longest of its batch (:mod:`sbert.inference.packing`): the same vectors, faster for a
            few dozen sentences of mixed lengths (what a server merges). Runs for BERT models on
            OpenVINO in float32 or bf16; elsewhere padded batches run. With it, ``batch_size`` and
            ``batch_cost_tokens`` do not apply and ``max_tokens`` caps the tokens of a pass
            (default 8192).
        prompt_length: The prompt's tokens (a pooling may leave them out).
    """

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
