"""Where a training run stands, and what it did."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainerState:
    """Where a run stands; callbacks receive it after every optimiser step."""

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
