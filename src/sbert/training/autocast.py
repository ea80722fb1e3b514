"""Mixed precision for training: what runs in which dtype on which device, and why.

With ``bf16=True`` (``--bf16``) the trainer asks for mixed precision:

- CUDA with bf16 (Ampere or newer): bf16 autocast. bf16 has float32's exponent range, so gradients
  neither underflow nor overflow and no loss scaling is needed.
- CUDA without bf16 (Volta, Turing): fp16 autocast with a gradient scaler
  (``torch.amp.GradScaler``): fp16's 5-bit exponent flushes small gradients to zero unless the loss
  is scaled up first; the scaler skips a step whose gradients overflowed and lowers the scale.
- A CPU with native bf16 (AVX512-BF16 or AMX): bf16 autocast; any other CPU: exact fp32, since
  emulated bf16 is slower than fp32 there.

Without ``bf16`` every device trains in exact fp32. The choice and its reason are logged and written
to the training log, as the encoder's plan says its choice.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

logger = logging.getLogger("sbert")


@dataclass(frozen=True)
class TrainingPrecision:
    """The dtype of the matrix products under autocast (``None``: exact fp32), whether a gradient
    scaler runs, and why."""

    device_type: str
    dtype: torch.dtype | None
    scaled: bool
    reason: str

    @property
    def name(self) -> str:
        return {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(self.dtype, "fp32")  # type: ignore[arg-type]

    def autocast(self) -> AbstractContextManager[Any]:
        """The autocast context of a training step (a no-op context in fp32)."""
        if self.dtype is None:
            return nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def scaler(self) -> torch.amp.GradScaler | None:
        """A fresh gradient scaler for fp16, else ``None``."""
        return torch.amp.GradScaler(self.device_type) if self.scaled else None

    def describe(self) -> str:
        scaling = " with a gradient scaler" if self.scaled else ""
        return f"training in {self.name}{scaling} on {self.device_type}: {self.reason}"


def training_precision(device: torch.device, mixed: bool) -> TrainingPrecision:
    """The precision a run on ``device`` trains in when mixed precision is (or is not) asked for.

    Examples:
        >>> training_precision(torch.device("cpu"), mixed=False).name
        'fp32'
    """
    kind = device.type
    if not mixed:
        return TrainingPrecision(kind, None, False, "exact fp32 (mixed precision not asked for)")
    if kind == "cuda":
        if bf16_supported(device):
            return TrainingPrecision(kind, torch.bfloat16, False, "the GPU computes bf16 natively")
        return TrainingPrecision(
            kind,
            torch.float16,
            True,
            "the GPU has no bf16 (before Ampere): fp16, whose gradients need scaling",
        )
    if bf16_supported(device):
        return TrainingPrecision(kind, torch.bfloat16, False, "the CPU computes bf16 natively")
    return TrainingPrecision(
        kind, None, False, "bf16 asked for, but this CPU has no native bf16 (slower than fp32)"
    )


def training_autocast(module: nn.Module, bf16: bool) -> AbstractContextManager[Any]:
    """bf16 autocast on ``module``'s device when asked and supported; a no-op context otherwise.

    (On CUDA without bf16 this is fp16 autocast; the trainer adds the gradient scaler it needs.)

    Examples:
        >>> isinstance(training_autocast(nn.Linear(1, 1), bf16=False), nullcontext)
        True
    """
    precision = training_precision(next(module.parameters()).device, bf16)
    if bf16 and precision.dtype is None:
        logger.warning(
            "bf16 requested but %s has no native bf16 support: training in fp32", precision.device_type
        )
    return precision.autocast()


def bf16_supported(device: torch.device) -> bool:
    """Whether ``device`` computes bf16 natively (CPU: AVX512-BF16 or AMX; CUDA: Ampere or newer)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    check = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    amx = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return bool((check and check()) or (amx and amx()))
