"""Numeric precision for inference: what the user asks for → what this machine can run fast."""

from __future__ import annotations

import importlib.util
import logging
import platform
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads only when a device is asked about: the CLI's --help stays fast
    import torch

logger = logging.getLogger("sbert")

PRECISIONS = ("auto", "float32", "bfloat16", "mixed", "int8")
BACKENDS = ("auto", "torch", "openvino")
CALIBRATED = ("mixed", "int8")  # static int8 in some or all projections: OpenVINO + NNCF only

# CPU flags (Linux /proc/cpuinfo) that mean bf16 / int8 matrix products run in hardware, not emulated.
_NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
_NATIVE_INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
INSTALL_OPENVINO = 'pip install "sbert[openvino]"'


def check_precision(precision: str) -> str:
    """Return ``precision`` in lower case, or raise ``ValueError`` listing the choices."""
    return _check_choice(precision, PRECISIONS, "precision")


def check_backend(backend: str) -> str:
    """Return ``backend`` in lower case, or raise ``ValueError`` listing the choices."""
    return _check_choice(backend, BACKENDS, "backend")


def _check_choice(value: str, choices: tuple[str, ...], what: str) -> str:
    normalised = value.lower() if isinstance(value, str) else value
    if normalised not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(choices)}")
    return normalised


@cache
def cpu_has_native_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AVX512-BF16, AMX, or Arm BF16).

    Without it PyTorch emulates bf16, which is slower than float32, so ``auto`` must not pick it.

    Example:
        >>> isinstance(cpu_has_native_bf16(), bool)
        True
    """
    flags = _cpu_flags(cpuinfo)
    if flags is None:
        return platform.system() == "Darwin" and platform.machine() == "arm64"  # Apple M2 and later
    return bool(flags & set(_NATIVE_BF16_FLAGS))


@cache
def cpu_has_native_int8(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this x86 CPU has int8 dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX)."""
    return bool((_cpu_flags(cpuinfo) or set()) & set(_NATIVE_INT8_FLAGS))


def _cpu_flags(cpuinfo: str | Path) -> set[str] | None:
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def openvino_installed(with_nncf: bool = False) -> bool:
    """Whether the ``openvino`` extra is importable (and ``nncf``, which int8 calibration needs)."""
    modules = ("openvino", "nncf") if with_nncf else ("openvino",)
    return all(importlib.util.find_spec(module) is not None for module in modules)


def resolve_precision(precision: str, device: torch.device, backend: str = "auto") -> str:
    """The precision ``encode()`` will run: ``float32``, ``bfloat16``, ``mixed`` or ``int8``.

    ``auto`` is bf16 where the hardware does it natively (AVX512-BF16 or AMX, Arm BF16, CUDA GPUs
    with bf16), else float32. It never picks a calibrated precision (``mixed``, ``int8``): their
    first use on a machine costs seconds of calibration, which a one-line query must not pay, and
    switching to them once a graph is cached or an input is long would give the same sentence
    different vectors from one call to the next (an index built with one and queried with the
    other). ``auto`` therefore depends only on the device, the backend and the installed extras;
    ``mixed`` (1.33x faster than bf16 on the measured CPU) is there to ask for.

    Asked for explicitly where the hardware, the extra or the backend cannot do it, ``int8`` falls
    back to float32, ``mixed`` to bf16 (or float32), and ``bfloat16`` where it would only be
    emulated to float32, each with a one-line warning: emulated low precision is slower, not faster.

    Example:
        >>> import torch
        >>> resolve_precision("float32", torch.device("cpu"))
        'float32'
    """
    precision = check_precision(precision)
    if precision == "auto":
        return _bf16_or_float32(device)
    if precision in CALIBRATED:
        problem = _int8_problem(device, backend)
        if problem is None:
            return precision
        fallback = torch_precision(precision, device)
        _warn_once(f"precision={precision!r} {problem}, so {fallback} is used instead")
        return fallback
    if precision == "bfloat16" and not _native_bf16(device):
        _warn_once(
            f"precision='bfloat16' needs native bf16 (AVX512-BF16 or AMX on CPU); {device} has none, "
            "so float32 is used instead"
        )
        return "float32"
    return precision


def torch_precision(precision: str, device: torch.device) -> str:
    """What PyTorch runs when OpenVINO cannot: int8 is float32, mixed keeps its bf16 part."""
    if precision == "int8":
        return "float32"
    return _bf16_or_float32(device) if precision == "mixed" else precision


def _bf16_or_float32(device: torch.device) -> str:
    return "bfloat16" if _native_bf16(device) else "float32"


def resolve_backend(backend: str, device: torch.device, precision: str) -> str:
    """The engine that runs ``precision`` (already resolved): ``torch`` or ``openvino``.

    ``auto`` is OpenVINO on CPU when the extra is installed (faster at every precision on the
    measured CPU), else PyTorch.

    Raises:
        ImportError: ``backend="openvino"`` without the extra installed.
        ValueError: ``backend="openvino"`` on a device other than the CPU.
    """
    backend = check_backend(backend)
    if backend == "auto":
        return "openvino" if device.type == "cpu" and openvino_installed() else "torch"
    if backend == "openvino":
        if not openvino_installed():
            raise ImportError(f"backend='openvino' needs the openvino extra: {INSTALL_OPENVINO}")
        if device.type != "cpu":
            raise ValueError(f"backend='openvino' runs on the CPU, not on {device}")
    return backend


def _int8_problem(device: torch.device, backend: str) -> str | None:
    if check_backend(backend) == "torch":
        return "runs only on the openvino backend, not on torch"
    if device.type != "cpu":
        return f"runs on the CPU, not on {device}"
    if not cpu_has_native_int8():
        return "needs int8 dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX); this CPU has none"
    if not openvino_installed(with_nncf=True):
        return f"needs the openvino extra ({INSTALL_OPENVINO})"
    return None


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """A fallback notice once per process, not once per ``encode()`` call."""
    if message not in _warned:
        _warned.add(message)
        logger.warning(message)


def _native_bf16(device: torch.device) -> bool:
    if device.type == "cuda":
        import torch

        return bool(torch.cuda.is_bf16_supported())
    return device.type == "cpu" and cpu_has_native_bf16()
