"""What this CPU multiplies natively, as a value: read once from the machine, or given (to simulate).

The precision rules (:mod:`sbert.inference.plan`) take a :class:`CpuCapabilities` instead of asking
the machine themselves, so tests exercise every CPU class on any machine, and a model reports
exactly the capabilities its plan was made for.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# CPU flags (Linux /proc/cpuinfo) that mean bf16 / int8 matrix products run in hardware, not emulated.
_NATIVE_BF16_FLAGS = frozenset(("avx512_bf16", "amx_bf16", "bf16"))
_NATIVE_INT8_FLAGS = frozenset(("avx512_vnni", "avx_vnni", "amx_int8"))


@dataclass(frozen=True)
class CpuCapabilities:
    """The matrix products a CPU runs in hardware.

    Attributes:
        bf16: bf16 products (AVX512-BF16, AMX, Arm BF16). Without them PyTorch and OpenVINO emulate
            bf16, which is slower than float32, so sbert never picks it.
        int8: int8 dot products (AVX512-VNNI, AVX-VNNI, AMX): what calibrated int8 needs to pay.
        name: A label for messages and reports.

    Examples:
        >>> CpuCapabilities.detect("/no/such/file").name
        'unknown CPU'
        >>> AVX2_ONLY.bf16, AVX2_ONLY.int8
        (False, False)
    """

    bf16: bool
    int8: bool
    name: str = ""

    @classmethod
    def detect(cls, cpuinfo: str | Path = "/proc/cpuinfo") -> CpuCapabilities:
        """Read the flags of ``cpuinfo`` (Linux); elsewhere, Apple M2 and later have bf16."""
        flags = _cpu_flags(cpuinfo)
        if flags is None:
            apple = platform.system() == "Darwin" and platform.machine() == "arm64"
            return cls(bf16=apple, int8=False, name="unknown CPU")
        bf16, int8 = bool(flags & _NATIVE_BF16_FLAGS), bool(flags & _NATIVE_INT8_FLAGS)
        return cls(bf16=bf16, int8=int8, name=_describe(bf16, int8))


# The three classes of x86 CPU sbert's rules distinguish (tests simulate each on any machine).
AVX2_ONLY = CpuCapabilities(bf16=False, int8=False, name="no bf16, no int8 dot product (e.g. AVX2 only)")
VNNI_NO_BF16 = CpuCapabilities(bf16=False, int8=True, name="int8 dot product (VNNI), no bf16")
BF16_AND_VNNI = CpuCapabilities(bf16=True, int8=True, name="bf16 and int8 dot product (VNNI)")
CPU_CLASSES = {"avx2": AVX2_ONLY, "vnni": VNNI_NO_BF16, "bf16": BF16_AND_VNNI}


SIMULATE_ENV = "SBERT_SIMULATE_CPU"


@cache
def this_cpu() -> CpuCapabilities:
    """The capabilities of the CPU this process runs on, read once.

    ``SBERT_SIMULATE_CPU=avx2`` (or ``vnni``, ``bf16``) plans as if on that class instead: what a
    model would run there (the computing still happens on this CPU). The test suite runs under each.
    """
    simulated = os.environ.get(SIMULATE_ENV)
    if simulated:
        if simulated not in CPU_CLASSES:
            raise ValueError(f"{SIMULATE_ENV}={simulated!r}; choose one of {', '.join(CPU_CLASSES)}")
        return CPU_CLASSES[simulated]
    return CpuCapabilities.detect()


def _describe(bf16: bool, int8: bool) -> str:
    if bf16 and int8:
        return BF16_AND_VNNI.name
    if int8:
        return VNNI_NO_BF16.name
    return "bf16, no int8 dot product" if bf16 else AVX2_ONLY.name


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
