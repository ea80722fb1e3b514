"""Numeric precision for inference: what the user asks for → what this machine can run fast."""

from __future__ import annotations

import importlib.util
import logging
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.base.options import BACKENDS, PRECISIONS, choice
from sbert.inference.cpu import CpuCapabilities, this_cpu

if TYPE_CHECKING:  # torch loads only when a device is asked about: the CLI's --help stays fast
    import torch

logger = logging.getLogger("sbert")

CALIBRATED = ("mixed", "int8")  # static int8 in some or all projections: OpenVINO + NNCF only

INSTALL_OPENVINO = 'pip install "sbert[openvino]"'


class ComputePrecision(StrEnum):
    """How ``encode()`` computes, parsed once where a user names it (model2vec's ``DType`` is the
    model). A member is the string it names: it compares, hashes, formats and prints as that string.

    Examples:
        >>> ComputePrecision.parse("BFloat16")
        'bfloat16'
        >>> ComputePrecision.parse("bfloat16") is ComputePrecision.BFLOAT16
        True
    """

    AUTO = "auto"
    FLOAT32 = "float32"
    BFLOAT16 = "bfloat16"
    MIXED = "mixed"
    INT8 = "int8"
    FLOAT16 = "float16"  # what auto runs on a CUDA GPU with tensor cores; not a name users pass

    def __repr__(self) -> str:  # shown as the string it stands for, in plans and doctests alike
        return repr(self.value)

    @classmethod
    def parse(cls, value: str) -> ComputePrecision:
        """``value`` (any case) as a precision, or a ``ValueError`` listing the choices."""
        return cls(choice(value, PRECISIONS, "precision"))


class ComputeBackend(StrEnum):
    """The engine asked for: ``auto``, ``torch`` or ``openvino`` (a member is its string)."""

    AUTO = "auto"
    TORCH = "torch"
    OPENVINO = "openvino"

    def __repr__(self) -> str:
        return repr(self.value)

    @classmethod
    def parse(cls, value: str) -> ComputeBackend:
        """``value`` (any case) as a backend, or a ``ValueError`` listing the choices."""
        return cls(choice(value, BACKENDS, "backend"))


def check_precision(precision: str) -> ComputePrecision:
    """Return ``precision`` parsed (lower case), or raise ``ValueError`` listing the choices."""
    return ComputePrecision.parse(precision)


def check_backend(backend: str) -> ComputeBackend:
    """Return ``backend`` parsed (lower case), or raise ``ValueError`` listing the choices."""
    return ComputeBackend.parse(backend)


def cpu_has_native_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AVX512-BF16, AMX, or Arm BF16).

    Without it PyTorch emulates bf16, which is slower than float32, so ``auto`` must not pick it.

    Examples:
        >>> isinstance(cpu_has_native_bf16(), bool)
        True
    """
    return CpuCapabilities.detect(cpuinfo).bf16


def cpu_has_native_int8(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this x86 CPU has int8 dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX)."""
    return CpuCapabilities.detect(cpuinfo).int8


def openvino_installed(with_nncf: bool = False) -> bool:
    """Whether the ``openvino`` extra is importable (and ``nncf``, which int8 calibration needs)."""
    modules = ("openvino", "nncf") if with_nncf else ("openvino",)
    return all(importlib.util.find_spec(module) is not None for module in modules)


def resolve_precision(
    precision: str, device: torch.device, backend: str = "auto", cpu: CpuCapabilities | None = None
) -> str:
    """The precision ``encode()`` will run: ``float32``, ``bfloat16``, ``float16``, ``mixed`` or ``int8``.

    ``auto`` is bf16 where the CPU does it natively (AVX512-BF16 or AMX, Arm BF16), float16 on CUDA
    GPUs with tensor cores (:func:`cuda_auto`), else float32. It never picks a calibrated precision
    (``mixed``, ``int8``): their first use on a machine costs seconds of calibration, which a
    one-line query must not pay, and
    switching to them once a graph is cached or an input is long would give the same sentence
    different vectors from one call to the next (an index built with one and queried with the
    other). ``auto`` therefore depends only on the device, the backend and the installed extras;
    ``mixed`` (1.33x faster than bf16 on the measured CPU) is there to ask for.

    Asked for explicitly where the hardware, the extra or the backend cannot do it, ``int8`` falls
    back to float32, ``mixed`` to bf16 (or float32), and ``bfloat16`` where it would only be
    emulated to float32, each with a one-line warning: emulated low precision is slower, not faster.

    Args:
        precision: What was asked for.
        device: Where it runs.
        backend: The backend asked for (``auto``, ``torch``, ``openvino``).
        cpu: The CPU's capabilities (default: this machine's, :func:`~sbert.inference.cpu.this_cpu`).

    Examples:
        >>> import torch
        >>> resolve_precision("float32", torch.device("cpu"))
        'float32'
        >>> from sbert.inference.cpu import AVX2_ONLY
        >>> resolve_precision("auto", torch.device("cpu"), cpu=AVX2_ONLY)
        'float32'
    """
    chosen, reason = choose_precision(
        check_precision(precision), device, check_backend(backend), cpu or this_cpu()
    )
    if reason is not None:
        warn_once(reason)
    return chosen


def choose_precision(
    precision: ComputePrecision, device: torch.device, backend: ComputeBackend, cpu: CpuCapabilities
) -> tuple[ComputePrecision, str | None]:
    """:func:`resolve_precision` without the warning: the precision, and why it differs from the one
    asked for (``None`` when it does not)."""
    if precision == "auto":
        if device.type == "cuda":
            return cuda_auto(device)[0], None
        return _bf16_or_float32(device, cpu), None
    if precision in CALIBRATED:
        problem = _int8_problem(device, backend, cpu)
        if problem is None:
            return precision, None
        fallback = torch_precision(precision, device, cpu)
        return fallback, f"precision={precision!r} {problem}, so {fallback} is used instead"
    if precision == "bfloat16" and not _native_bf16(device, cpu):
        return ComputePrecision.FLOAT32, (
            f"precision='bfloat16' needs native bf16 (AVX512-BF16 or AMX on CPU); {device} has none, "
            "so float32 is used instead"
        )
    return precision, None


def cuda_auto(device: torch.device) -> tuple[ComputePrecision, str]:
    """What ``auto`` runs on a CUDA device, and why (the plan's :attr:`~sbert.inference.plan.EnginePlan.reason`).

    float16 where the GPU has tensor cores (compute capability 7.0 and up): on an H100 it ran as
    fast as bf16 and stayed 75× closer to float32 (worst cosine distance 2e-6 against 1.5e-4 for
    all-MiniLM-L6-v2 on STSb, issue 35), where bf16 ran slower than float32 through autocast.
    Older GPUs multiply fp16 slower than float32 (a GTX 1080 at 1/64 the rate), so they run float32.
    """
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    if major >= 7:
        return ComputePrecision.FLOAT16, (
            f"auto on {torch.cuda.get_device_name(device)} (compute capability {major}.{minor}) is float16: "
            "tensor cores run it as fast as bf16, and it stays closer to float32 (cosine distance about "
            "2e-6, bf16 about 1.5e-4)"
        )
    return ComputePrecision.FLOAT32, (
        f"auto on {torch.cuda.get_device_name(device)} (compute capability {major}.{minor}, no tensor "
        "cores) is float32: this GPU multiplies fp16 and bf16 slower than float32"
    )


def torch_precision(
    precision: str, device: torch.device, cpu: CpuCapabilities | None = None
) -> ComputePrecision:
    """What PyTorch runs when OpenVINO cannot: int8 is float32, mixed keeps its bf16 part."""
    if precision == "int8":
        return ComputePrecision.FLOAT32
    if precision == "mixed":
        return _bf16_or_float32(device, cpu or this_cpu())
    return ComputePrecision(precision)


def _bf16_or_float32(device: torch.device, cpu: CpuCapabilities) -> ComputePrecision:
    return ComputePrecision.BFLOAT16 if _native_bf16(device, cpu) else ComputePrecision.FLOAT32


def resolve_backend(backend: str, device: torch.device, precision: str) -> ComputeBackend:
    """The engine that runs ``precision`` (already resolved): ``torch`` or ``openvino``.

    ``auto`` is OpenVINO on CPU when the extra is installed (faster at every precision on the
    measured CPU), else PyTorch.

    Raises:
        ImportError: ``backend="openvino"`` without the extra installed.
        ValueError: ``backend="openvino"`` on a device other than the CPU.
    """
    backend = check_backend(backend)
    if backend == "auto":
        cpu_openvino = device.type == "cpu" and openvino_installed()
        return ComputeBackend.OPENVINO if cpu_openvino else ComputeBackend.TORCH
    if backend == "openvino":
        if not openvino_installed():
            raise ImportError(f"backend='openvino' needs the openvino extra: {INSTALL_OPENVINO}")
        if device.type != "cpu":
            raise ValueError(f"backend='openvino' runs on the CPU, not on {device}")
    return backend


def _int8_problem(device: torch.device, backend: ComputeBackend, cpu: CpuCapabilities) -> str | None:
    if backend == "torch":
        return "runs only on the openvino backend, not on torch"
    if device.type != "cpu":
        return f"runs on the CPU, not on {device}"
    if not cpu.int8:
        return "needs int8 dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX); this CPU has none"
    if not openvino_installed(with_nncf=True):
        return f"needs the openvino extra ({INSTALL_OPENVINO})"
    return None


_warned: set[str] = set()


def warn_once(message: str) -> None:
    """A fallback notice once per process, not once per ``encode()`` call."""
    if message not in _warned:
        _warned.add(message)
        logger.warning(message)


def _native_bf16(device: torch.device, cpu: CpuCapabilities) -> bool:
    if device.type == "cuda":
        import torch

        return bool(torch.cuda.is_bf16_supported())
    return device.type == "cpu" and cpu.bf16
