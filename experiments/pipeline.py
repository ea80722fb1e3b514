"""One reproduction run: build the cells, run what the cache lacks, write the report after every cell."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments.cache import CellCache, code_fingerprint
from experiments.cells import Context, build_cells
from experiments.charts import write_charts
from experiments.models import ModelStore
from experiments.report import build_results, render_markdown
from experiments.runner import CellOutcome, run_cells
from experiments.scale import Scale
from sbert.base.files import write_text_atomic
from sbert.base.outputs import OutputKind, claiming

REPORT_FILE = "REPORT.md"
RESULTS_FILE = "results.json"


# A report folder is written in place, file by file: other files there are left alone.
REPORT = OutputKind(
    "report",
    recognise=lambda folder: any((folder / name).exists() for name in (RESULTS_FILE, REPORT_FILE, ".work")),
)


@claiming("output", REPORT)
def reproduce(
    output: str | Path,
    scale: Scale,
    data_dir: str,
    command: str,
    base: str | None = None,
    work_dir: str | Path | None = None,
    only: Sequence[str] = (),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the paper's experiments at ``scale`` and write ``REPORT.md``, ``results.json`` and charts.

    Args:
        output: Report folder.
        scale: Experiment sizes (:data:`~experiments.scale.FULL` or ``QUICK``).
        data_dir: The data directory; a missing data set skips its cells.
        command: The command line that asked for this run (recorded in the report).
        base: Model every cell starts from (default: the bundled all-MiniLM-L6-v2).
        work_dir: Cell cache and trained models (default ``OUTPUT/.work``); keep it to resume.
        only: Run only the cells whose id starts with one of these prefixes (e.g. ``table1``).
        log: Receives the progress lines.

    Returns:
        The results written to ``results.json``.
    """
    output = Path(output)
    work = Path(work_dir) if work_dir is not None else output / ".work"
    fingerprint = code_fingerprint()
    models = ModelStore(work / "models", fingerprint, data_dir, base, scale.bf16)
    cells = build_cells(Context(scale, data_dir, models, base))
    if only:
        cells = [cell for cell in cells if cell.id.startswith(tuple(only))]
        if not cells:
            raise ValueError(f"no cell id starts with {', '.join(only)}")
    started = time.strftime("%Y-%m-%d %H:%M:%S")

    def write(outcomes: list[CellOutcome]) -> None:
        done = {outcome.cell.id for outcome in outcomes}
        pending = [CellOutcome(cell, "pending") for cell in cells if cell.id not in done]
        results = build_results([*outcomes, *pending], scale.as_dict(), command, started)
        write_text_atomic(output / RESULTS_FILE, json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        write_text_atomic(output / REPORT_FILE, render_markdown(results))

    output.mkdir(parents=True, exist_ok=True)
    outcomes = run_cells(cells, CellCache(work / "cells", fingerprint), log, after_each=write)
    write(outcomes)
    results = render(output)  # with the charts
    log(f"report: {output / REPORT_FILE}")
    return results


def render(output: str | Path) -> dict[str, Any]:
    """(Re)write ``REPORT.md`` and the charts from ``OUTPUT/results.json``, running nothing."""
    output = Path(output)
    results: dict[str, Any] = json.loads((output / RESULTS_FILE).read_text(encoding="utf-8"))
    report = render_markdown(results, write_charts(results, output))
    path = output / REPORT_FILE
    if not path.exists() or path.read_text(encoding="utf-8") != report:  # an unchanged report is left alone
        write_text_atomic(path, report)
    return results
