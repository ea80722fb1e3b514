"""Approximate search at scale: HNSW recall@10 and latency, and exact chunked search memory, on 1M vectors.

The corpus is random but clustered, generated here with a seed (nothing is stored): cluster centres
in a latent space of ``--latent-dim`` dimensions, points scattered around them, mapped to 384-d by a
random linear map, plus isotropic noise, then normalised. Sentence embeddings are like this: far
fewer directions carry meaning than the vector has coordinates. Queries come from the same process
and are not in the corpus.

Measured in one run:
- exact search (``semantic_search``, chunked) of every query: the ground truth, its time, and the
  peak resident memory above what the process held before (the kernel's high-water mark, reset
  through ``/proc/self/clear_refs`` just before);
- HNSW build time, recall@10 against the exact results, and per-query latency, one query at a time,
  median over all queries (after a warm-up).

    flock /tmp/sbert-heavy.lock python benchmarks/ann_index.py --size 1000000 --queries 1000
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import date
from pathlib import Path

import faiss
import numpy as np
import torch

from sbert.embeddings.search import semantic_search
from sbert.index import VectorIndex, recall_at_k


def clustered_vectors(
    n: int, dim: int, clusters: int, latent_dim: int, noise: float, seed: int, chunk: int = 100_000
) -> np.ndarray:
    """``n`` unit vectors (n, dim) around ``clusters`` centres of a ``latent_dim``-d space, float32."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, latent_dim)).astype(np.float32)
    mapping = rng.normal(size=(latent_dim, dim)).astype(np.float32) / np.sqrt(latent_dim)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        latent = centres[rng.integers(0, clusters, size)] + 0.5 * rng.normal(size=(size, latent_dim))
        block = latent.astype(np.float32) @ mapping + noise * rng.normal(size=(size, dim)).astype(np.float32)
        out[start : start + size] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def rss_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def measure(index: VectorIndex, queries: np.ndarray, exact: list) -> dict[str, float]:
    """Recall@10 against the exact results, and single-query latency (median and p99, ms)."""
    recall = recall_at_k(index, queries, k=10, exact=exact)
    for query in queries[:100]:  # warm-up
        index.search(query, top_k=10)
    latencies = []
    for query in queries:
        begin = time.perf_counter()
        index.search(query, top_k=10)
        latencies.append(time.perf_counter() - begin)
    return {
        "recall_at_10": recall,
        "median_latency_ms": 1000 * statistics.median(latencies),
        "p99_latency_ms": 1000 * float(np.percentile(latencies, 99)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--latent-dim", type=int, default=48)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--hnsw-m", type=int, default=32)
    parser.add_argument("--ef-construction", type=int, default=80)
    parser.add_argument("--ef-search", type=int, nargs="+", default=[64], help="one or more efSearch values")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()

    start = time.perf_counter()
    data = clustered_vectors(
        args.size + args.queries, args.dim, args.clusters, args.latent_dim, args.noise, args.seed
    )
    corpus, queries = data[: args.size], data[args.size :].copy()
    print(f"generated {args.size} + {args.queries} vectors in {time.perf_counter() - start:.1f} s")

    before = rss_bytes("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    start = time.perf_counter()
    exact = semantic_search(queries, corpus, top_k=10)
    exact_seconds = time.perf_counter() - start
    exact_extra = rss_bytes("VmHWM") - before
    print(
        f"exact chunked search: {exact_seconds:.1f} s for {args.queries} queries "
        f"({1000 * exact_seconds / args.queries:.1f} ms/query), peak extra memory {exact_extra / 2**20:.0f} MiB"
    )

    start = time.perf_counter()
    params = {"hnsw_m": args.hnsw_m, "ef_construction": args.ef_construction}
    index = VectorIndex.build(corpus, kind="hnsw", params=params, show_progress_bar=True)
    build_seconds = time.perf_counter() - start
    print(f"HNSW build (M={args.hnsw_m}, efConstruction={args.ef_construction}): {build_seconds:.0f} s")

    by_ef = {}
    for ef_search in args.ef_search:
        index.faiss_index.hnsw.efSearch = ef_search
        by_ef[ef_search] = measure(index, queries, exact)
        print(
            f"HNSW efSearch={ef_search}: recall@10 {by_ef[ef_search]['recall_at_10']:.4f}, median latency "
            f"{by_ef[ef_search]['median_latency_ms']:.3f} ms (p99 {by_ef[ef_search]['p99_latency_ms']:.3f} ms) "
            f"over {len(queries)} single queries"
        )
    result = {
        "date": date.today().isoformat(),
        "cpu": platform.processor() or platform.machine(),
        "torch_threads": torch.get_num_threads(),
        "faiss_threads": faiss.omp_get_max_threads(),
        "args": vars(args),
        "exact_seconds": exact_seconds,
        "exact_peak_extra_mib": exact_extra / 2**20,
        "hnsw_build_seconds": build_seconds,
        "hnsw_by_ef_search": by_ef,
    }
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
