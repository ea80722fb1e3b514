"""Run experiment cells in order, reusing cached results, showing which cell runs and how long is left."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sbert.reproduce.cache import CellCache

logger = logging.getLogger("sbert")


class MissingData(Exception):
    """Raised by a cell whose data set is not in the data directory; the cell is skipped, not failed."""


@dataclass
class Cell:
    """One experiment: a function of its parameters that returns a JSON-able dict of figures.

    Args:
        id: Stable name, ``table/row`` (also the cache file name).
        run: ``run(**params) -> dict``.
        params: Everything the result depends on besides the code.
        estimate_s: Expected run time on the reference machine, for the time-left estimate.
    """

    id: str
    run: Callable[..., dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    estimate_s: float = 60.0


@dataclass
class CellOutcome:
    cell: Cell
    status: str  # "ran", "cached", "skipped" or "failed"
    result: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    reason: str = ""


def run_cells(cells: list[Cell], cache: CellCache, log: Callable[[str], None] = print) -> list[CellOutcome]:
    """Run every cell not already cached; a missing data set skips its cell, an error fails only that cell."""
    pending = [c for c in cells if cache.get(c.id, c.params) is None]
    left_s = sum(c.estimate_s for c in pending)
    outcomes = []
    for number, cell in enumerate(cells, start=1):
        cached = cache.get(cell.id, cell.params)
        if cached is not None:
            outcomes.append(CellOutcome(cell, "cached", cached.result, cached.seconds))
            continue
        log(f"[{number}/{len(cells)}] {cell.id}  (about {_duration(left_s)} left)")
        start = time.perf_counter()
        try:
            result = cell.run(**cell.params)
        except MissingData as missing:
            outcomes.append(CellOutcome(cell, "skipped", reason=str(missing)))
            log(f"    skipped: {missing}")
        except Exception as error:  # one broken cell must not lose the others' results
            logger.exception("cell %s failed", cell.id)
            outcomes.append(CellOutcome(cell, "failed", reason=f"{type(error).__name__}: {error}"))
        else:
            seconds = time.perf_counter() - start
            cache.put(cell.id, cell.params, result, seconds)
            outcomes.append(CellOutcome(cell, "ran", result, seconds))
        left_s = max(0.0, left_s - cell.estimate_s)
    return outcomes


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes >= 1 else f"{round(seconds)} s"
