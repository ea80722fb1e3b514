"""Timing both sides of a comparison in one run: alternate their order every repeat, so that
machine noise (another job, a frequency change) hits each side alike."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def alternating_order(names: Sequence[str], repeat: int) -> list[str]:
    """``names`` in order on even repeats, reversed on odd ones."""
    return list(names) if repeat % 2 == 0 else list(reversed(names))


def alternating_rates(
    runners: dict[str, Callable[[], object]], repeats: int, items: int
) -> dict[str, list[float]]:
    """Items per second of each runner, once per repeat, the runners' order alternating."""
    rates: dict[str, list[float]] = {name: [] for name in runners}
    for repeat in range(repeats):
        for name in alternating_order(list(runners), repeat):
            start = time.perf_counter()
            runners[name]()
            rates[name].append(items / (time.perf_counter() - start))
    return rates
