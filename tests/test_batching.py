import numpy as np
import pytest

from sbert.batching import length_sorted_batches


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
