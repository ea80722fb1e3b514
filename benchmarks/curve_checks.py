"""benchmarks/gpu_train.py's curve checks: two trainers' losses equal within dropout's noise, and
their first step, with dropout off, equal within rounding."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

# The first step's losses with dropout off may differ only by rounding: in fp32 by the order of sums
# (CPU: 1e-7), in bf16 by two different kernels' rounding (CPU: 3e-5 padded, 0.3% unpadded). Dropout's draws alone move a
# first step by ~10% (see benchmarks/gpu_train.py's docstring), so these bounds are far tighter than the noise.
FIRST_STEP_BOUND = {"fp32": 1e-3, "bf16": 1e-2}


def dropout_off(path: Path) -> Path:
    """A copy of the model directory at ``path`` whose BERT config has every dropout at 0."""
    quiet = Path(tempfile.mkdtemp(prefix="sbert-no-dropout-")) / "model"
    shutil.copytree(path, quiet)
    config = json.loads((quiet / "config.json").read_text())
    config |= {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    (quiet / "config.json").write_text(json.dumps(config))
    return quiet


def first_step_row(name: str, ours: float, theirs: float) -> dict[str, Any]:
    """The two first-step losses in precision ``name``, their relative gap and its verdict.

    Examples:
        >>> first_step_row("fp32", 0.3, 0.3)["met"], first_step_row("bf16", 0.33, 0.3)["met"]
        (True, False)
    """
    relative = abs(ours - theirs) / abs(theirs)
    bound = FIRST_STEP_BOUND[name]
    return {
        "sbert": ours,
        "sentence-transformers": theirs,
        "relative": relative,
        "bound": bound,
        "met": relative <= bound,
    }


def within_noise(a: list[float], b: list[float]) -> tuple[bool, str]:
    """The second half's means within two standard errors of the step-to-step noise (same weights
    and data order; dropout's draws differ). The first step (dropout on) is reported, not judged:
    one draw, ~15% apart at one s.d. by chance (:func:`first_step` judges it with dropout off)."""
    half = len(a) // 2
    noise = statistics.pstdev(np.diff(a[half:]).tolist() + np.diff(b[half:]).tolist()) / math.sqrt(2)
    error = 2 * noise * math.sqrt(2 / max(1, len(a) - half))
    gap = abs(statistics.mean(a[half:]) - statistics.mean(b[half:]))
    first = abs(a[0] - b[0]) / abs(b[0])
    met = len(a) == len(b) and gap <= error
    why = (
        f"second half's means {gap:.4f} apart (2 s.e. {error:.4f}); first step with dropout {first:.1%} apart"
    )
    return met, why
