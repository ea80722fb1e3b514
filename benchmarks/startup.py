"""What a fresh machine waits for: start-up of the command and of the library, and the first encode.

Each figure is the median wall time of fresh processes: ``sbert --help``, ``sbert --version``,
``python -c 'import sbert'``, ``sbert similarity`` of two sentences with an empty graph cache (the
whole command: start-up, model load, first encode), and ``from_pretrained`` to the first two
vectors at ``precision="auto"`` with an empty cache (benchmarks/first_encode.py's measurement; the
goal is ≤ 2 s, the command's start-up goal ≤ 1 s). The load average is printed: other work on the
machine slows every wall time, so the processes' CPU time (user + system, children included) is
given beside it; start-up is single-threaded, so on a quiet machine its wall time is about its CPU
time.

    flock /tmp/sbert-heavy.lock python benchmarks/startup.py
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from first_encode import first_encode_seconds

SBERT = [shutil.which("sbert") or sys.executable, *([] if shutil.which("sbert") else ["-m", "sbert"])]


def wall_and_cpu_seconds(command: list[str], cache: str | None = None) -> tuple[float, float]:
    environment = {**os.environ, **({"SBERT_CACHE_DIR": cache} if cache else {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=environment, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    commands = {
        "`sbert --help`": [*SBERT, "--help"],
        "`sbert --version`": [*SBERT, "--version"],
        "`python -c 'import sbert'`": [sys.executable, "-c", "import sbert"],
    }
    load = os.getloadavg()[0]
    rows = {
        name: [wall_and_cpu_seconds(command) for _ in range(args.repeats)]
        for name, command in commands.items()
    }
    similarity, first = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            command = [*SBERT, "similarity", "A man plays guitar.", "It rains."]
            similarity.append(wall_and_cpu_seconds(command, cache))
        with tempfile.TemporaryDirectory() as cache:
            first.append((first_encode_seconds("auto", cache), float("nan")))
    rows['`sbert similarity "A man plays guitar." "It rains."`, empty cache (whole command)'] = similarity
    rows["first encode, `auto`, empty cache (`from_pretrained` to 2 vectors)"] = first
    print(f"load average before: {load:.2f}; {args.repeats} runs each\n")
    print("| what | wall, median (s) | CPU, median (s) |\n|---|---|---|")
    for name, times in rows.items():
        wall, cpu = zip(*times)
        cpu_median = statistics.median(cpu)
        shown = "n/a (imports included)" if cpu_median != cpu_median else f"{cpu_median:.2f}"  # NaN
        print(f"| {name} | {statistics.median(wall):.2f} | {shown} |")


if __name__ == "__main__":
    main()
