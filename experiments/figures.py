"""Reading a ``results.json``: typed access to finished cells, and how figures are written in tables."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


class Figures:
    """Typed access to the finished cells of a ``results.json``."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.cells = results["cells"]

    def result(self, cell_id: str) -> dict[str, Any] | None:
        cell = self.cells.get(cell_id)
        return cell["result"] if cell and cell["status"] in ("ran", "cached") else None

    def value(self, cell_id: str, *keys: str) -> float | None:
        found: Any = self.result(cell_id)
        for key in keys:
            if not isinstance(found, dict) or key not in found:
                return None
            found = found[key]
        return found if isinstance(found, int | float) else None

    def seeds(self, prefix: str) -> list[float]:
        """The STSb test figures of ``table2/PREFIX-seedN`` cells."""
        return [
            cell["result"]["test"]
            for cell_id, cell in self.cells.items()
            if cell_id.startswith(f"table2/{prefix}-seed") and cell["status"] in ("ran", "cached")
        ]

    def sts_average(self, cell_id: str) -> float | None:
        result = self.result(cell_id)
        if not result or result["missing"]:
            return None
        return statistics.mean(result["spearman"].values())


def mean_std(values: Sequence[float]) -> tuple[float, float] | None:
    if not values:
        return None
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def escape(text: str) -> str:
    """Text for a Markdown table cell: ``|u−v|`` must not end the cell."""
    return text.replace("|", "\\|")


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_seeds(values: Sequence[float]) -> str:
    summary = mean_std(values)
    if summary is None:
        return "-"
    mean, std = summary
    return f"{mean:.2f} ± {std:.2f} (n={len(values)}: {', '.join(f'{v:.2f}' for v in values)})"
