"""Where a training run stands, and what it did."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainerState:
    """Where a run stands; callbacks receive it after every optimiser step.

    ``loss`` is the loss of the last step read back from the device: the trainer reads losses at
    its sync points (every ``log_steps`` steps, checkpoints, evaluations, epoch ends), not every
    step, so that a GPU never waits for the host (:mod:`sbert.training.steps`).
    """

    global_step: int = 0
    epoch: int = 0
    step_in_epoch: int = 0
    loss: float = math.nan
    learning_rate: float = 0.0
    best_score: float | None = None
    best_step: int | None = None
    dev_scores: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TrainingResult:
    """What a run did: steps taken, the best dev score and where it was reached, whether it was stopped."""

    output_dir: Path
    global_step: int
    total_steps: int
    best_score: float | None
    best_step: int | None
    interrupted: bool
    seconds: float


# The fields of TrainerState a checkpoint keeps (the loss and learning rate are recomputed).
_KEPT = ("global_step", "epoch", "step_in_epoch", "best_score", "best_step", "dev_scores")


def kept_state(state: TrainerState) -> dict[str, Any]:
    """What a checkpoint's ``state.json`` records of ``state``."""
    return {name: getattr(state, name) for name in _KEPT}


def restored_state(record: dict[str, Any]) -> TrainerState:
    """The state a checkpoint's ``state.json`` recorded."""
    return TrainerState(**{name: record[name] for name in _KEPT})
