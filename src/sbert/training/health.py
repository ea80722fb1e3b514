"""When training must stop: a training state is *good*, and may be kept, only while it has a finite
loss and finite, non-exploding weights.

The rule, checked by the trainer every ``log_steps`` steps and before anything is written:

- the loss of every step is finite (checked at each step before its update lands);
- every weight is finite;
- the L2 norm of all trainable weights together is at most :data:`WEIGHT_GROWTH_LIMIT` times the norm
  they started the run from. Fine-tuning moves weights by a few per cent; a learning rate far too
  high (``--lr 1e9``) multiplies them by orders of magnitude within a step or two, long before the
  loss turns NaN, since cosine similarities and normalised embeddings stay finite for any weights.

A state that breaks the rule raises :class:`TrainingDivergedError` instead of being saved, so the
checkpoints and the saved model never hold such a state: the last checkpoint is the last good one.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from sbert.base.distributed import DistributedError

# A run stops when the weights' norm grows beyond this multiple of its starting value.
WEIGHT_GROWTH_LIMIT = 10.0


class TrainingDivergedError(RuntimeError):
    """The loss or the weights left the safe range; the message names the step and the last good checkpoint."""


def weight_norm(module: nn.Module) -> float:
    """L2 norm of all trainable weights of ``module`` together (``inf`` or ``nan`` when one is not finite).

    Examples:
        >>> weight_norm(nn.Linear(2, 2, bias=False).requires_grad_(False))
        0.0
    """
    norms = [p.detach().float().norm() for p in module.parameters() if p.requires_grad]
    return float(torch.stack(norms).norm()) if norms else 0.0


def weights_problem(norm: float, start_norm: float) -> str | None:
    """What is wrong with weights of norm ``norm`` that started at ``start_norm``, or ``None``.

    Examples:
        >>> weights_problem(12.0, 10.0) is None
        True
        >>> weights_problem(1e9, 10.0)
        'the weights exploded (norm 1e+09, more than 10× the 10 they started from)'
    """
    if not math.isfinite(norm):
        return "the weights are no longer finite"
    if norm > WEIGHT_GROWTH_LIMIT * max(start_norm, 1e-12):
        return (
            f"the weights exploded (norm {norm:.3g}, more than {WEIGHT_GROWTH_LIMIT:g}× "
            f"the {start_norm:.3g} they started from)"
        )
    return None


def checkpoint_note(checkpoint_dir: Path) -> str:
    """Where the last good checkpoint is, for the message of a stopped run."""
    if (checkpoint_dir / "state.json").is_file():
        return f"the last good checkpoint is kept in {checkpoint_dir} (continue with --resume)"
    return "no checkpoint had been written yet"


def divergence_message(problem: str, step: int, epoch: int, checkpoint_dir: Path) -> str:
    """The message of a run stopped by ``problem`` at ``step`` of (0-based) ``epoch``.

    Examples:
        >>> divergence_message("the loss is nan", 7, 0, Path("out/checkpoint"))
        'training stopped: the loss is nan at step 7 (epoch 1); no checkpoint had been written yet. Try a lower learning rate, or --no-bf16.'
    """
    return (
        f"training stopped: {problem} at step {step} (epoch {epoch + 1}); {checkpoint_note(checkpoint_dir)}. "
        "Try a lower learning rate, or --no-bf16."
    )


def lost_peer_error(label: str, step: int, cause: str, checkpoint_dir: Path) -> DistributedError:
    """The error of a distributed run that lost or waited in vain for a peer at ``step``.

    Examples:
        >>> str(lost_peer_error("rank 1 of 2", 5, "peer gone", Path("out/checkpoint")))
        'rank 1 of 2: stopped at step 5: peer gone; no checkpoint had been written yet'
    """
    return DistributedError(f"{label}: stopped at step {step}: {cause}; {checkpoint_note(checkpoint_dir)}")
