"""Where the suite's time goes, whatever the machine's load: ``python -m pytest -p tests.cpu_times``
records each test's CPU seconds (this process and the child processes it waited for: servers, CLI
runs), its fixtures' setup included, beside its wall seconds, and prints the 30 largest at the end.
``SBERT_CPU_TIMES=times.json`` also writes every test's figures, after each test (a run cut short
keeps what it measured). On a shared machine wall time measures the other jobs; CPU time does not.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator

import pytest

TIMES: dict[str, tuple[float, float]] = {}  # node id → (CPU seconds, wall seconds)


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    cpu, wall = cpu_seconds(), time.perf_counter()
    yield
    TIMES[item.nodeid] = (cpu_seconds() - cpu, time.perf_counter() - wall)
    if os.environ.get("SBERT_CPU_TIMES"):
        with open(os.environ["SBERT_CPU_TIMES"], "w", encoding="utf-8") as handle:
            json.dump(TIMES, handle, indent=0)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    ranked = sorted(TIMES.items(), key=lambda item: -item[1][0])[:30]
    terminalreporter.write_sep(
        "=", f"largest CPU times (of {len(TIMES)} tests; total {sum(t[0] for t in TIMES.values()):.0f} s)"
    )
    for nodeid, (cpu, wall) in ranked:
        terminalreporter.write_line(f"{cpu:8.1f} s CPU {wall:8.1f} s wall  {nodeid}")
