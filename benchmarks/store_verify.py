"""What checking a store's shard checksums on read costs: opened with and without ``verify``.

A store of random vectors (default 200,000 × 384 float32 in shards of 100,000 rows, as
``sbert encode`` writes them) is read in two ways, each with ``verify=True`` (the default: every
shard's SHA-256 is checked the first time it is read) and ``verify=False``, alternating, several
repeats, median:

- ``lookup``: open the store and read 10 random rows (touches both shards);
- ``scan``: open the store and iterate every row (``iter_batches``).

    flock /tmp/sbert-heavy.lock python benchmarks/store_verify.py
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np

from sbert.store import EmbeddingStore, StoreWriter


def build(path: str, rows: int, dim: int, shard_size: int) -> None:
    rng = np.random.default_rng(0)
    settings = {"dim": dim, "dtype": "float32", "normalized": False, "model": {}, "texts": False}
    writer = StoreWriter.open(path, settings)
    for start in range(0, rows, shard_size):
        count = min(shard_size, rows - start)
        with writer.shard() as shard:
            for piece in range(0, count, 10_000):
                n = min(10_000, count - piece)
                shard.write(
                    np.arange(start + piece, start + piece + n),
                    None,
                    rng.normal(size=(n, dim)).astype("float32"),
                )
    writer.finish()


def timed(work: Callable[[bool], object], verify: bool) -> float:
    start = time.perf_counter()
    work(verify)
    return time.perf_counter() - start


def cpu_name() -> str:
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        names = [line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")]
    return names[0] if names else platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--shard-size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/store"
        build(path, args.rows, args.dim, args.shard_size)
        rows = np.random.default_rng(1).choice(args.rows, 10, replace=False)
        cases = {
            "lookup": lambda verify: EmbeddingStore.open(path, verify=verify).vectors(rows),
            "scan": lambda verify: sum(
                len(b.ids) for b in EmbeddingStore.open(path, verify=verify).iter_batches()
            ),
        }
        print(
            f"{cpu_name()}, {args.rows} rows × {args.dim} float32, "
            f"shards of {args.shard_size}, median of {args.repeats}"
        )
        for name, case in cases.items():
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.repeats):
                for verify in (True, False):
                    times[verify].append(timed(case, verify))
            on, off = statistics.median(times[True]), statistics.median(times[False])
            print(
                f"{name:7s} verify=True {on * 1000:8.1f} ms   verify=False {off * 1000:8.1f} ms   (+{(on - off) * 1000:.1f} ms)"
            )


if __name__ == "__main__":
    main()
