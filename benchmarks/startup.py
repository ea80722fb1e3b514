"""What a fresh machine waits for: start-up of the command and of the library, and the first encode.

Each figure is the median wall time of fresh processes: ``sbert --help``, ``sbert --version``,
``python -c 'import sbert'``, ``sbert encode corpus.txt -o vectors.npy`` of the README's 3-line
file (the whole command, from process start to the file written; with an empty graph cache, as a
user's first command, and filled by a first run, as after it), ``sbert similarity`` of two
sentences with an empty graph cache (the whole command: start-up, model load, first encode), and ``from_pretrained`` to the
first two vectors at ``precision="auto"`` with an empty cache (benchmarks/first_encode.py's
measurement; the goal is ≤ 2 s, the command's start-up goal ≤ 1 s). The load average is printed:
other work on the machine slows every wall time, so the processes' CPU time (user + system,
children included) is given beside it; start-up is single-threaded, so on a quiet machine its wall
time is about its CPU time.

``--phases`` prints instead where one cold ``sbert encode`` of 3 lines spends its time: each import
and step in the order the command takes them, wall and CPU, in one fresh process.

    flock /tmp/sbert-heavy.lock python benchmarks/startup.py
    flock /tmp/sbert-heavy.lock python benchmarks/startup.py --phases
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


CORPUS = "A man is playing a guitar.\nThe rocket launched the satellite.\nSomeone plays an instrument.\n"

# One cold `sbert encode` in the order the command takes its steps, each import timed on its own.
PHASES = """
import sys, time
start, cpu = time.perf_counter(), time.process_time()
last = [0.0, 0.0]
def mark(name):
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    print(f"| {name} | {wall - last[0]:.2f} | {used - last[1]:.2f} |")
    last[:] = [wall, used]
import sbert.cli; mark("`import sbert.cli` (the command's parser)")
import numpy; mark("import numpy")
import torch; mark("import torch")
import transformers; mark("import transformers (its package only)")
from transformers import PreTrainedModel; mark("import transformers' model classes (modeling_utils)")
import openvino; mark("import openvino")
from sbert import SentenceEncoder; mark("import the rest of sbert.encoder.model")
model = SentenceEncoder.from_pretrained(); mark("`from_pretrained()`: bundled model read")
model.encode(sys.argv[1:]); mark("first `encode` of 3 lines: engine built (graph read or converted, compiled, probed), run")
print(f"| total | {last[0]:.2f} | {last[1]:.2f} |")
"""


def phases(encode: list[str]) -> None:
    subprocess.run(encode, capture_output=True, check=True)  # the graph cache filled, as after a first run
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    print("| step | wall (s) | CPU (s) |\n|---|---|---|")
    sys.stdout.flush()
    subprocess.run([sys.executable, "-c", PHASES, *CORPUS.splitlines()], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--phases", action="store_true", help="where one cold `sbert encode` spends its time")
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    corpus = os.path.join(folder, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as handle:
        handle.write(CORPUS)
    encode = [*SBERT, "encode", corpus, "-o", os.path.join(folder, "vectors.npy")]
    if args.phases:
        phases(encode)
        return
    commands = {
        "`sbert --help`": [*SBERT, "--help"],
        "`sbert --version`": [*SBERT, "--version"],
        "`python -c 'import sbert'`": [sys.executable, "-c", "import sbert"],
        "`sbert encode corpus.txt -o vectors.npy`, 3 lines, graph cache filled (whole command)": encode,
    }
    wall_and_cpu_seconds(encode)  # the graph cache filled, the files in the disk cache
    load = os.getloadavg()[0]
    rows = {
        name: [wall_and_cpu_seconds(command) for _ in range(args.repeats)]
        for name, command in commands.items()
    }
    similarity, first, cold = [], [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:  # a user's very first command
            cold.append(wall_and_cpu_seconds(encode, cache))
        with tempfile.TemporaryDirectory() as cache:
            command = [*SBERT, "similarity", "A man plays guitar.", "It rains."]
            similarity.append(wall_and_cpu_seconds(command, cache))
        with tempfile.TemporaryDirectory() as cache:
            first.append((first_encode_seconds("auto", cache), float("nan")))
    shutil.rmtree(folder)
    rows["`sbert encode corpus.txt -o vectors.npy`, 3 lines, empty graph cache (whole command)"] = cold
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
