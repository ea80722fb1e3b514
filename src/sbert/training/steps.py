"""One optimiser step with no wait for the device, and the losses read back once per interval.

A GPU runs ahead of the host only while the host never asks it for a value: ``float(loss)`` after
every step (what the trainer did) makes the host wait for the step to finish before it can queue
the next one. Here a step only queues work:

- the loss stays on the device, in :class:`StepRunner`'s window, and is read back (one copy for the
  whole window; under ``torchrun`` one all-reduce with the stop flag) at the trainer's sync points:
  every ``log_steps`` steps, before a checkpoint or an evaluation, at an epoch's end, on a stop;
- a step whose gradients are not finite (a NaN or infinite loss gives such gradients) is skipped on
  the device: the fused AdamW takes a ``found_inf`` flag (as it does from a gradient scaler) and
  leaves weights, moments and step count as they were. The run still stops with
  :class:`~sbert.training.health.TrainingDivergedError` at the next sync point, naming the first
  step whose loss was not finite; no checkpoint or model is written before (the weights written
  would be those of the last finite step anyway). Gradients come from every rank's all-reduce, so
  every rank skips the same steps;
- fp16 runs its gradient scaler (``torch.amp.GradScaler``), which with a fused optimizer passes its
  scale and ``found_inf`` to the kernel too: no sync either (a non-fused optimizer would make the
  scaler read ``found_inf`` back every step).

An optimizer that is not fused (a device other than the CPU or CUDA) cannot skip on the device: its
loss is read back and checked every step, as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.optim import Optimizer

from sbert.training.autocast import TrainingPrecision
from sbert.training.config import TrainingConfig


class StepRunner:
    """Forward, backward, clipping and the optimizer step of one batch, queued on the device.

    Args:
        objective: The loss module (its parameters are the optimizer's).
        optimizer: AdamW from :func:`~sbert.training.schedule.build_optimizer`.
        scheduler: The learning-rate schedule, stepped after the optimizer.
        precision: Autocast dtype and whether a gradient scaler runs.
        max_grad_norm: Clip the gradient norm to this (``None``: no clipping).
    """

    def __init__(
        self,
        objective: nn.Module,
        optimizer: Optimizer,
        scheduler: Any,
        precision: TrainingPrecision,
        max_grad_norm: float | None,
    ) -> None:
        self.objective = objective
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.precision = precision
        self.max_grad_norm = max_grad_norm
        self.scaler = precision.scaler()
        self.parameters = [p for p in objective.parameters() if p.requires_grad]
        # Fused AdamW skips a step on the device from a found_inf flag; the loop version cannot.
        self.skips_on_device = bool(optimizer.defaults.get("fused"))
        self.window: list[Tensor] = []  # each step's (weighted) loss since the last read, on the device
        self.first_step = 1  # the global step of window[0]

    def step(self, forward: Callable[[], Tensor], weight: float, scale: float) -> Tensor:
        """Run one step; returns its loss (a device tensor: reading it is the caller's sync)."""
        with self.precision.autocast():
            loss = forward()
        self.window.append(loss.detach().double() * weight)
        scaled = loss * scale
        if self.scaler is not None:
            self.scaler.scale(scaled).backward()
            if self.max_grad_norm is not None:
                self.scaler.unscale_(self.optimizer)  # clip the true gradients
        else:
            scaled.backward()
        norm = self._clip_or_measure()
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            if self.skips_on_device and norm is not None:
                # 1.0 when a gradient is NaN or infinite: the fused kernel then leaves everything as it was.
                self.optimizer.found_inf = (~torch.isfinite(norm)).float()  # type: ignore[attr-defined]
            self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss

    def _clip_or_measure(self) -> Tensor | None:
        """The gradients' total norm (a device scalar), clipped to ``max_grad_norm`` where set."""
        if self.max_grad_norm is not None:
            return nn.utils.clip_grad_norm_(self.parameters, self.max_grad_norm)
        if not self.skips_on_device or self.scaler is not None:
            return None
        grads = [p.grad for p in self.parameters if p.grad is not None]
        return nn.utils.get_total_norm(grads) if grads else None

    def read(self, stop: bool, reduce: bool, device: torch.device) -> tuple[int, list[float], bool]:
        """The window's first step, its losses on the host (summed over ranks with ``reduce``) and
        whether any rank asked to stop: one copy from the device (one all-reduce under ``torchrun``)."""
        first = self.first_step
        if not self.window and not reduce:
            return first, [], stop
        empty = torch.zeros(0, dtype=torch.float64, device=device)
        values = torch.stack(self.window) if self.window else empty
        if reduce:
            flag = torch.tensor([float(stop)], dtype=torch.float64, device=values.device)
            values = torch.cat([values, flag])
            dist.all_reduce(values)
        host = values.tolist()
        self.first_step += len(self.window)
        self.window.clear()
        if reduce:
            return first, host[:-1], host[-1] > 0
        return first, host, stop

    def mark(self, next_step: int) -> None:
        """The next step to run is ``next_step`` (after a resume)."""
        self.first_step = next_step


def sync_point(config: TrainingConfig, step: int, total_steps: int, epoch_end: bool) -> bool:
    """Whether ``step`` reads the losses back: every ``log_steps`` steps, at checkpoints and
    evaluations, at an epoch's end and the last step; the same steps on every rank."""
    due = [step % config.log_steps == 0, step == total_steps, epoch_end]
    due += [n is not None and step % n == 0 for n in (config.checkpoint_steps, config.eval_steps)]
    return any(due)


def first_bad(values: list[float], first_step: int) -> tuple[int, float] | None:
    """The first step whose loss is not finite, and that loss, or ``None``.

    Examples:
        >>> first_bad([0.5, float("nan"), 0.4], first_step=6)
        (7, nan)
    """
    for offset, value in enumerate(values):
        if not math.isfinite(value):
            return first_step + offset, value
    return None
