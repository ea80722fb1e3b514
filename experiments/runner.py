"""Run experiment cells in order, reusing cached results, showing which cell runs and how long is left."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from experiments.cache import CellCache
from sbert.data.paths import MissingDataError

logger = logging.getLogger("sbert")


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
    status: str  # "ran", "cached", "skipped", "failed", or "pending" (not reached yet)
    result: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    reason: str = ""


def run_cells(
    cells: list[Cell],
    cache: CellCache,
    log: Callable[[str], None] = print,
    after_each: Callable[[list[CellOutcome]], object] | None = None,
) -> list[CellOutcome]:
    """Run every cell not already cached; a missing data set skips its cell, an error fails only that cell.

    ``after_each`` gets the outcomes so far after every cell that ran, so that a report written
    from it is current even if the run is stopped.
    """
    found = {cell.id: cache.get(cell.id, cell.params) for cell in cells}
    left_s = sum(cell.estimate_s for cell in cells if found[cell.id] is None)
    outcomes = []
    for number, cell in enumerate(cells, start=1):
        cached = found[cell.id]
        if cached is not None:
            outcomes.append(CellOutcome(cell, "cached", cached.result, cached.seconds))
            continue
        log(f"[{number}/{len(cells)}] {cell.id}  (about {_duration(left_s)} left)")
        start = time.perf_counter()
        try:
            result = cell.run(**cell.params)
        except MissingDataError as missing:  # a data set not in the data directory: skip, do not fail
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
        if after_each is not None:
            after_each(outcomes)
    return outcomes


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes >= 1 else f"{round(seconds)} s"
