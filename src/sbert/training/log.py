"""The training log: one JSON object a line (loss, learning rate, dev scores), and its PNG plot."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from sbert.base import json_text
from sbert.base.files import atomic_path

logger = logging.getLogger("sbert")


class TrainingLog:
    """Append-only JSONL log; ``truncate(size)`` drops what a killed run wrote after its checkpoint.

    Examples:
        >>> import tempfile, os
        >>> log = TrainingLog(os.path.join(tempfile.mkdtemp(), "log.jsonl"))
        >>> log.write({"step": 1, "loss": 0.5})
        >>> log.records()
        [{'step': 1, 'loss': 0.5}]
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def size(self) -> int:
        return self.path.stat().st_size if self.path.is_file() else 0

    def truncate(self, size: int) -> None:
        if self.path.is_file():
            with self.path.open("r+b") as handle:
                handle.truncate(size)

    def write(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json_text.dumps(record) + "\n")

    def records(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]


def plot_training_curve(records: list[dict[str, Any]], path: str | Path, metric: str) -> bool:
    """Draw training loss (left axis) and the dev ``metric`` (right axis) against the step.

    Returns ``False`` (and logs why) when matplotlib, the ``plot`` extra, is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.info("matplotlib is not installed (pip install 'sbert[plot]'): no training-curve plot")
        return False
    losses = [(r["step"], r["loss"]) for r in records if "loss" in r]
    scores = [(r["step"], r["dev"][metric]) for r in records if metric in r.get("dev", {})]
    figure, loss_axis = plt.subplots(figsize=(7, 4))
    if losses:
        loss_axis.plot(*zip(*losses), color="tab:blue", label="training loss")
    loss_axis.set_xlabel("step")
    loss_axis.set_ylabel("training loss", color="tab:blue")
    if scores:
        score_axis = loss_axis.twinx()
        score_axis.plot(*zip(*scores), color="tab:orange", marker="o", label=f"dev {metric}")
        score_axis.set_ylabel(f"dev {metric}", color="tab:orange")
    figure.tight_layout()
    with atomic_path(path) as tmp, tmp.open("wb") as handle:
        figure.savefig(handle, format="png", dpi=100)
    plt.close(figure)
    return True
