from __future__ import annotations

import numpy as np
import pytest

from sbert.training.batches import batches_per_epoch, epoch_batches
from sbert.training.schedule import WarmupLinear, warmup_steps


def test_every_example_once_and_order_depends_on_seed_and_epoch() -> None:
    lengths = list(np.random.default_rng(0).integers(1, 50, size=103))
    batches = epoch_batches(lengths, 103, batch_size=8, seed=1, epoch=0, chunk_batches=4)
    assert sorted(np.concatenate(batches).tolist()) == list(range(103))
    assert len(batches) == batches_per_epoch(103, 8) == 13
    again = epoch_batches(lengths, 103, batch_size=8, seed=1, epoch=0, chunk_batches=4)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again))
    other_epoch = epoch_batches(lengths, 103, batch_size=8, seed=1, epoch=1, chunk_batches=4)
    assert not all(np.array_equal(a, b) for a, b in zip(batches, other_epoch))


def test_length_grouping_cuts_padding() -> None:
    lengths = np.random.default_rng(0).integers(5, 60, size=512)

    def padded(batches: list[np.ndarray]) -> int:
        return sum(len(b) * int(lengths[b].max()) for b in batches)

    grouped = epoch_batches(lengths.tolist(), 512, batch_size=16, seed=0, epoch=0, chunk_batches=8)
    shuffled = epoch_batches(None, 512, batch_size=16, seed=0, epoch=0)
    assert padded(grouped) < 0.75 * padded(shuffled)


def test_warmup_then_linear_decay() -> None:
    assert warmup_steps(100, 0.1) == 10
    schedule = WarmupLinear(warmup=10, total=100)
    assert schedule(0) == 0.0 and schedule(5) == 0.5 and schedule(10) == 1.0
    assert schedule(55) == pytest.approx(0.5) and schedule(100) == 0.0
