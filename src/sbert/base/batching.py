"""Smart batching: sentences of similar token length share a batch, so padding is cut to a minimum."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

# What one forward pass costs beyond its tokens, in padded tokens: reading every weight once. For
# all-MiniLM-L6-v2 on one OpenVINO CPU thread, 3.9 ms against 0.16 ms a token, so 24 tokens
# (benchmarks/batch_cost.py, 2026-11-24, Intel Xeon, float32).
BATCH_COST_TOKENS = 24


def length_sorted_batches(
    lengths: Sequence[int],
    batch_size: int,
    max_tokens: int | None = None,
    batch_cost_tokens: int | None = None,
) -> list[np.ndarray]:
    """Split indices into batches of similar length, longest first.

    Each batch is padded only to its longest member, so sorting by token length keeps the padded
    area close to the real one. Longest first, so that running out of memory happens at once.

    Args:
        lengths: Token count of each sentence.
        batch_size: Most sentences in one batch.
        max_tokens: Optional cap on padded tokens (sentences × longest) in one batch.
        batch_cost_tokens: ``None``: every batch holds ``batch_size`` sentences (the last fewer).
            A number: the cost of one forward pass in padded tokens, beyond its tokens; the cuts
            then minimise padded tokens plus this cost per batch (see :func:`cheapest_cuts`). For
            a few dozen sentences of mixed length, fixed-size batches pad a third of their area.

    Returns:
        A list of index arrays; together they hold every index exactly once.

    Examples:
        >>> [b.tolist() for b in length_sorted_batches([3, 9, 4, 8], batch_size=2)]
        [[1, 3], [2, 0]]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    if batch_cost_tokens is not None:
        longest_first = np.maximum(np.asarray(lengths, dtype=np.int64)[order], 1)
        cuts = cheapest_cuts(longest_first, batch_size, max_tokens, batch_cost_tokens)
        return [order[start:end] for start, end in itertools.pairwise(cuts)]
    batches: list[np.ndarray] = []
    start = 0
    while start < len(order):
        longest = max(int(lengths[order[start]]), 1)
        size = batch_size if max_tokens is None else max(1, min(batch_size, max_tokens // longest))
        batches.append(order[start : start + size])
        start += size
    return batches


def cheapest_cuts(
    longest_first: np.ndarray, batch_size: int, max_tokens: int | None, batch_cost_tokens: int
) -> list[int]:
    """Cut points ``[0, ..., n]`` of lengths sorted longest first into the cheapest batches.

    A batch ``[i, j)`` costs ``batch_cost_tokens + (j − i) · longest_first[i]``: its padded tokens
    plus what a forward pass costs whatever its size (on a CPU, reading every weight once:
    :data:`BATCH_COST_TOKENS`).
    Dynamic programming over the prefixes, O(n · batch_size); batches respect ``batch_size`` and
    ``max_tokens`` (a sentence longer than ``max_tokens`` still gets a batch of its own).

    Examples:
        >>> cheapest_cuts(np.array([40, 12, 11, 10]), batch_size=4, max_tokens=None, batch_cost_tokens=16)
        [0, 1, 4]
    """
    n = len(longest_first)
    best = np.zeros(n + 1)  # best[j]: the cheapest cost of the first j sentences
    previous = np.zeros(n + 1, dtype=np.int64)  # where the last batch of that cheapest split starts
    for end in range(1, n + 1):
        starts = np.arange(max(0, end - batch_size), end)
        sizes = end - starts
        padded = sizes * longest_first[starts]
        cost = best[starts] + batch_cost_tokens + padded
        if max_tokens is not None:
            cost = np.where((padded <= max_tokens) | (sizes == 1), cost, np.inf)
        pick = int(np.argmin(cost))
        best[end], previous[end] = cost[pick], starts[pick]
    cuts = [n]
    while cuts[-1] > 0:
        cuts.append(int(previous[cuts[-1]]))
    return cuts[::-1]


# Tokens of one batch on a GPU unless the caller caps them: text-embeddings-inference's default
# max_batch_tokens, a batch large enough to keep an H100 busy with a MiniLM-sized model.
MAX_BATCH_TOKENS = 16384


def token_budget_batches(
    lengths: Sequence[int], max_batch_tokens: int, max_batch_size: int | None = None
) -> list[np.ndarray]:
    """Split indices into batches of similar length, longest first, each holding at most
    ``max_batch_tokens`` real tokens (text-embeddings-inference's ``max_batch_tokens``).

    For a forward pass that spends nothing on padding (:mod:`sbert.inference.cuda.unpadded`): the cost
    of a batch is its real tokens, so short sentences fill large batches and long ones small ones.
    A sentence longer than the budget gets a batch of its own.

    Args:
        lengths: Token count of each sentence.
        max_batch_tokens: Most real tokens in one batch.
        max_batch_size: Optional cap on sentences in one batch.

    Returns:
        A list of index arrays; together they hold every index exactly once.

    Examples:
        >>> [b.tolist() for b in token_budget_batches([3, 9, 4, 8, 2], max_batch_tokens=12)]
        [[1], [3, 2], [0, 4]]
    """
    if max_batch_tokens < 1:
        raise ValueError(f"max_batch_tokens must be at least 1, got {max_batch_tokens}")
    if max_batch_size is not None and max_batch_size < 1:
        raise ValueError(f"max_batch_size must be at least 1, got {max_batch_size}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    ends = np.cumsum(np.maximum(np.asarray(lengths, dtype=np.int64)[order], 1))  # tokens up to each one
    batches: list[np.ndarray] = []
    start = 0
    while start < len(order):
        before = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + max_batch_tokens, side="right")))
        if max_batch_size is not None:
            stop = min(stop, start + max_batch_size)
        batches.append(order[start:stop])
        start = stop
    return batches
