"""bf16 autocast for training, where the device computes bf16 natively (else exact fp32)."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch
from torch import nn

logger = logging.getLogger("sbert")


def training_autocast(module: nn.Module, bf16: bool) -> AbstractContextManager[Any]:
    """bf16 autocast on ``module``'s device when asked and supported; a no-op context otherwise.

    Examples:
        >>> isinstance(training_autocast(nn.Linear(1, 1), bf16=False), nullcontext)
        True
    """
    if not bf16:
        return nullcontext()
    device = next(module.parameters()).device
    if not bf16_supported(device):
        logger.warning("bf16 requested but %s has no native bf16 support: training in fp32", device)
        return nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def bf16_supported(device: torch.device) -> bool:
    """Whether ``device`` computes bf16 natively (CPU: AVX512-BF16 or AMX; CUDA: Ampere or newer)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    check = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    amx = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return bool((check and check()) or (amx and amx()))
