"""Numeric precision for inference: what the user asks for → what this machine can run fast."""

from __future__ import annotations

import logging
import platform
from functools import cache
from pathlib import Path

import torch

logger = logging.getLogger("sbert")

PRECISIONS = ("auto", "float32", "bfloat16")

# CPU flags (Linux /proc/cpuinfo) that mean bf16 matrix products run in hardware, not emulated.
_NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def check_precision(precision: str) -> str:
    """Return ``precision`` in lower case, or raise ``ValueError`` listing the choices."""
    normalised = precision.lower() if isinstance(precision, str) else precision
    if normalised not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    return normalised


@cache
def cpu_has_native_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AVX512-BF16, AMX, or Arm BF16).

    Without it PyTorch emulates bf16, which is slower than float32, so ``auto`` must not pick it.

    Example:
        >>> isinstance(cpu_has_native_bf16(), bool)
        True
    """
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.system() == "Darwin" and platform.machine() == "arm64"  # Apple M2 and later
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags = set(value.split())
            return bool(flags & {*_NATIVE_BF16_FLAGS, "bf16"})
    return False


def resolve_precision(precision: str, device: torch.device) -> str:
    """The precision ``encode()`` will run: ``float32`` or ``bfloat16``.

    ``auto`` picks bf16 where the hardware does it natively (CPUs with AVX512-BF16 or AMX, CUDA GPUs
    with bf16 support) and float32 elsewhere. An explicit ``bfloat16`` where bf16 would only be
    emulated falls back to float32 with a one-line warning: emulated bf16 is slower, not faster.

    Example:
        >>> resolve_precision("float32", torch.device("cpu"))
        'float32'
    """
    precision = check_precision(precision)
    if precision == "float32":
        return precision
    native = _native_bf16(device)
    if precision == "auto":
        return "bfloat16" if native else "float32"
    if not native:
        logger.warning(
            "precision='bfloat16' needs native bf16 (AVX512-BF16 or AMX on CPU); %s has none, "
            "so float32 is used instead",
            device,
        )
        return "float32"
    return precision


def _native_bf16(device: torch.device) -> bool:
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return device.type == "cpu" and cpu_has_native_bf16()
