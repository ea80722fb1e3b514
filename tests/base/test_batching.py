import itertools

import numpy as np
import pytest

from sbert.base.batching import length_sorted_batches, token_budget_batches


def test_every_index_once_longest_first() -> None:
    lengths = [5, 1, 9, 3, 9, 2, 7]
    batches = length_sorted_batches(lengths, batch_size=3)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    assert [len(b) for b in batches] == [3, 3, 1]


def test_token_budget_caps_padded_tokens() -> None:
    lengths = [10, 10, 10, 2, 2, 2, 2]
    batches = length_sorted_batches(lengths, batch_size=100, max_tokens=20)
    for batch in batches:
        assert len(batch) * max(lengths[i] for i in batch) <= 20 or len(batch) == 1


def test_empty_and_bad_sizes() -> None:
    assert length_sorted_batches([], batch_size=4) == []
    with pytest.raises(ValueError, match="batch_size"):
        length_sorted_batches([1], batch_size=0)


def _cost(lengths: list[int], batches: list[np.ndarray], per_batch: int) -> int:
    return sum(per_batch + len(batch) * max(lengths[i] for i in batch) for batch in batches)


def test_batch_cost_cuts_are_the_cheapest_split() -> None:
    """Against every split of the sorted lengths into contiguous batches (brute force on 9 items)."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        lengths = rng.integers(3, 60, 9).tolist()
        batches = length_sorted_batches(lengths, batch_size=4, batch_cost_tokens=16)
        assert sorted(np.concatenate(batches).tolist()) == list(range(9))
        assert all(len(batch) <= 4 for batch in batches)
        order = sorted(range(9), key=lambda i: -lengths[i])
        best = min(
            _cost(lengths, [np.array(order[a:b]) for a, b in itertools.pairwise(cuts)], 16)
            for mask in range(2**8)
            for cuts in [[0, *[i + 1 for i in range(8) if mask >> i & 1], 9]]
            if all(b - a <= 4 for a, b in itertools.pairwise(cuts))
        )
        assert _cost(lengths, batches, 16) == best


def test_batch_cost_cuts_pad_less_than_fixed_batches() -> None:
    lengths = [40, 38, 12, 11, 11, 10, 9, 9, 8, 8, 7, 6, 6, 5, 5, 4]
    fixed = length_sorted_batches(lengths, batch_size=8)
    cheapest = length_sorted_batches(lengths, batch_size=8, batch_cost_tokens=16)
    assert _cost(lengths, cheapest, 16) < _cost(lengths, fixed, 16)
    assert [len(b) for b in cheapest] == [2, 6, 8]  # the two long ones apart, not padding six others


def test_batch_cost_cuts_respect_max_tokens() -> None:
    lengths = [300, 40, 40, 40, 40, 5, 5]
    batches = length_sorted_batches(lengths, batch_size=8, max_tokens=100, batch_cost_tokens=16)
    assert all(len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 100 for b in batches)
    assert [0] in [b.tolist() for b in batches]  # longer than the cap: a batch of its own


@pytest.mark.parametrize("budget", [1, 7, 20, 64, 10_000])
def test_token_budget_batches_hold_every_index_within_the_budget(budget: int) -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=200).tolist()
    batches = token_budget_batches(lengths, max_batch_tokens=budget)
    assert sorted(np.concatenate(batches).tolist()) == list(range(200))
    for batch in batches:
        tokens = sum(lengths[i] for i in batch)
        assert tokens <= budget or len(batch) == 1  # only a sentence longer than the budget exceeds it
    # Longest first, and greedy: adding the next sentence would have broken the budget.
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(lengths, reverse=True)
    for batch, following in itertools.pairwise(batches):
        assert sum(lengths[i] for i in batch) + lengths[following[0]] > budget


def test_token_budget_batches_respect_a_sentence_cap() -> None:
    batches = token_budget_batches([2] * 10, max_batch_tokens=100, max_batch_size=4)
    assert [len(batch) for batch in batches] == [4, 4, 2]


def test_token_budget_batches_reject_a_budget_below_one() -> None:
    with pytest.raises(ValueError, match="max_batch_tokens must be at least 1, got 0"):
        token_budget_batches([3], max_batch_tokens=0)
