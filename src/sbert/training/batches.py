"""The order of training examples: shuffled each epoch, grouped by token length to cut padding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def epoch_batches(
    lengths: Sequence[int] | None,
    count: int,
    batch_size: int,
    seed: int,
    epoch: int,
    chunk_batches: int = 64,
) -> list[np.ndarray]:
    """The batches of one epoch as index arrays; a pure function of (seed, epoch), so resuming replays it.

    Without ``lengths`` the examples are simply shuffled. With ``lengths``, the shuffled order is cut
    into chunks of ``chunk_batches · batch_size`` examples, each chunk is sorted by length and cut into
    batches, and the batches of all chunks are shuffled: batches hold similar lengths (little padding)
    while their order, and which examples meet in a chunk, stay random.

    Examples:
        >>> [b.tolist() for b in epoch_batches([5, 1, 5, 1], 4, batch_size=2, seed=0, epoch=0)]
        [[1, 3], [2, 0]]
    """
    if count < 1:
        raise ValueError("no training examples")
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(count)
    if lengths is None:
        return [order[start : start + batch_size] for start in range(0, count, batch_size)]
    all_lengths = np.asarray(lengths, dtype=np.int64)
    chunk = batch_size * chunk_batches
    batches: list[np.ndarray] = []
    for start in range(0, count, chunk):
        members = order[start : start + chunk]
        members = members[np.argsort(-all_lengths[members], kind="stable")]
        batches.extend(members[i : i + batch_size] for i in range(0, len(members), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def batches_per_epoch(count: int, batch_size: int, min_batch: int = 1) -> int:
    """Optimiser steps in one epoch: the last batch may be smaller, and counts if it has ``min_batch`` examples.

    Examples:
        >>> batches_per_epoch(10, 4), batches_per_epoch(9, 4, min_batch=2)
        (3, 2)
    """
    return count // batch_size + (count % batch_size >= min_batch)


def example_lengths(objective: Any, examples: Sequence[Any]) -> list[int] | None:
    """Each example's token length, from the loss's optional ``lengths(examples)``; ``None`` without it
    (the batches are then plain shuffles).

    Examples:
        >>> class Loss:
        ...     def lengths(self, examples):
        ...         return [len(e) for e in examples]
        >>> example_lengths(Loss(), ["ab", "c"]), example_lengths(object(), ["ab", "c"])
        ([2, 1], None)
    """
    lengths_of = getattr(objective, "lengths", None)
    return None if lengths_of is None else list(lengths_of(examples))
