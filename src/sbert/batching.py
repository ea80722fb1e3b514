"""Smart batching: sentences of similar token length share a batch, so padding is cut to a minimum."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, max_tokens: int | None = None
) -> list[np.ndarray]:
    """Split indices into batches of similar length, longest first.

    Each batch is padded only to its longest member, so sorting by token length keeps the padded
    area close to the real one. Longest first, so that running out of memory happens at once.

    Args:
        lengths: Token count of each sentence.
        batch_size: Most sentences in one batch.
        max_tokens: Optional cap on padded tokens (sentences × longest) in one batch.

    Returns:
        A list of index arrays; together they hold every index exactly once.

    Example:
        >>> [b.tolist() for b in length_sorted_batches([3, 9, 4, 8], batch_size=2)]
        [[1, 3], [2, 0]]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    batches: list[np.ndarray] = []
    start = 0
    while start < len(order):
        longest = max(int(lengths[order[start]]), 1)
        size = batch_size if max_tokens is None else max(1, min(batch_size, max_tokens // longest))
        batches.append(order[start : start + size])
        start += size
    return batches
