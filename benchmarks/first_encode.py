"""Time to the first vectors in a new process, with the calibrated graph cache empty and filled.

Each measurement is a fresh Python process that loads the bundled model and encodes two sentences
(``from_pretrained`` to result, imports excluded). ``empty``: a new cache folder, so ``mixed`` and
``int8`` calibrate; ``filled``: the same folder again, so they read the stored graph. Medians of
the repeats (each repeat: a new folder, empty then filled).

    flock /tmp/sbert-heavy.lock python benchmarks/first_encode.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = """
import sys, time
from sbert import SentenceEncoder
start = time.perf_counter()
SentenceEncoder.from_pretrained(device="cpu", precision=sys.argv[1]).encode(["A man plays a guitar.", "A dog runs."])
print(time.perf_counter() - start)
"""


def first_encode_seconds(precision: str, cache: str) -> float:
    environment = {**os.environ, "SBERT_CACHE_DIR": cache}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, precision], env=environment, capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--precisions", nargs="+", default=["float32", "bfloat16", "mixed", "int8"])
    args = parser.parse_args()
    print("| precision | cache empty (s) | cache filled (s) |\n|---|---|---|")
    for precision in args.precisions:
        empty, filled = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache:
                empty.append(first_encode_seconds(precision, cache))
                filled.append(first_encode_seconds(precision, cache))
        print(f"| {precision} | {statistics.median(empty):.1f} | {statistics.median(filled):.1f} |")


if __name__ == "__main__":
    main()
