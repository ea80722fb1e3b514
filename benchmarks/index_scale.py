"""Index kinds at 1M and 10M sentence vectors: build time, size, RSS, recall@10, latency, 2 threads.

The vectors are real sentence embeddings or derived from them (``benchmarks/index_scale_data.py``
says how: the ~190k distinct sentences of the shared data encoded with the bundled model; new
vectors mix a real vector with one of its 10 nearest real neighbours, add noise, re-normalise).
1,000 real sentences are held out as queries; the ground truth is the exact float32 top-10 over the
corpus, computed in chunks. Every corpus lives in a ``.npy`` memory map and is streamed.

For each kind: the index is built from the memory map with ``build_index`` (train on a sample,
add shard by shard, rescoring file written as it goes), saved, then served by a fresh process
(``serve``) that loads it as a user would and reports its resident memory (VmRSS after the queries,
and the peak VmHWM), recall@10 against the ground truth (all 1,000 queries, searched as one
batch, which also gives queries/s), and single-query latency p50/p99 over the 1,000 queries one at
a time (the exhaustive flat and binary kinds: the first 100 or 200), after 10 warm-up queries, on
2 threads.
Compressed kinds are measured at several ``nprobe`` / ``rescore_multiplier`` settings.

    python benchmarks/index_scale_data.py                     # vectors, queries, ground truth
    flock /tmp/sbert-heavy.lock python benchmarks/index_scale.py --size 1000000
    flock /tmp/sbert-heavy.lock python benchmarks/index_scale.py --size 10000000 --kinds binary binary_ivf ivfpq
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

THREADS = 2
# Idle OpenMP threads sleep instead of spinning: on a shared machine, spinning threads waiting for a
# descheduled partner made single-query binary IVF search 30x slower (measured: 32 ms against 1 ms).
ENV = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": str(THREADS)}
# Query-time settings measured per kind: (nprobe or efSearch, rescore_multiplier).
SETTINGS = {
    "flat": [(0, 1)],
    "hnsw": [(64, 1), (128, 1)],
    "binary": [(0, 4), (0, 10), (0, 20)],
    "binary_ivf": [(64, 10), (128, 10), (256, 10)],
    "ivfpq": [(64, 20), (64, 40), (128, 40), (128, 80), (256, 80)],
}


SAMPLED = {"flat": 100, "binary": 200}


def rss(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def serve(index_dir: Path, cache: Path, truth_file: Path) -> dict:
    """Load an index as a user would and measure it (run in a fresh process)."""
    import faiss

    from sbert.index import VectorIndex
    from sbert.index.kinds import IVF_KINDS

    faiss.omp_set_num_threads(THREADS)
    sys.path.insert(0, str(Path(__file__).parent))
    from index_scale_data import held_out_queries

    queries = held_out_queries(cache)
    truth = np.load(truth_file, allow_pickle=False)
    begin = time.perf_counter()
    index = VectorIndex.load(index_dir)
    out: dict = {"load_s": time.perf_counter() - begin, "rss_after_load": rss("VmRSS"), "settings": []}
    for probe, multiplier in SETTINGS[index.kind]:
        if index.kind in IVF_KINDS:
            index.faiss_index.nprobe = probe
        elif index.kind == "hnsw":
            index.faiss_index.hnsw.efSearch = probe
        index.params["rescore_multiplier"] = multiplier
        # Exhaustive kinds scan the whole corpus per query: their latency is sampled on fewer queries.
        timed = queries[: SAMPLED.get(index.kind, len(queries))]
        for query in timed[:10]:
            index.search(query, top_k=10)
        latencies = []
        for query in timed:
            start = time.perf_counter()
            index.search(query, top_k=10)
            latencies.append(time.perf_counter() - start)
        start = time.perf_counter()
        found = [{h.corpus_id for h in hits} for hits in index.search(queries, top_k=10)]
        batched = len(queries) / (time.perf_counter() - start)
        recall = float(np.mean([len(f & set(t.tolist())) / 10 for f, t in zip(found, truth)]))
        out["settings"].append(
            {
                "nprobe_or_ef": probe,
                "rescore_multiplier": multiplier,
                "recall_at_10": recall,
                "p50_ms": 1000 * float(np.percentile(latencies, 50)),
                "p99_ms": 1000 * float(np.percentile(latencies, 99)),
                "batched_qps": batched,
            }
        )
    out["rss_after_queries"], out["peak_rss"] = rss("VmRSS"), rss("VmHWM")
    return out


def build_in_child(kind: str, corpus_file: Path, output: Path) -> dict:
    """:func:`build` in its own process, so one kind's memory does not weigh on the next."""
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import json,sys; sys.path.insert(0, 'benchmarks'); import index_scale as b; "
            f"from pathlib import Path; print(json.dumps(b.build({kind!r}, Path({str(corpus_file)!r}), "
            f"Path({str(output)!r}))))",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=ENV,
    )
    return json.loads(built.stdout.strip().splitlines()[-1])


def build(kind: str, corpus_file: Path, output: Path) -> dict:
    import faiss

    from sbert.index.building import ArraySource, build_index

    faiss.omp_set_num_threads(THREADS)
    corpus = np.load(corpus_file, mmap_mode="r", allow_pickle=False)
    start = time.perf_counter()
    index = build_index(ArraySource(corpus), output, kind=kind, rescore="int8", show_progress_bar=True)
    seconds = time.perf_counter() - start
    sizes = {p.name: p.stat().st_size for p in output.iterdir()}
    return {"build_s": seconds, "files": sizes, "params": index.params, "build_peak_rss": rss("VmHWM")}


def store_build(corpus_file: Path, cache: Path, kind: str) -> dict:
    """Write the corpus into an embedding store, then time ``sbert index build --store`` and its peak RSS."""
    import resource

    from sbert.embeddings.identity import ModelIdentity
    from sbert.store import StoreWriter

    corpus = np.load(corpus_file, mmap_mode="r", allow_pickle=False)
    store_dir = cache / f"store-{len(corpus)}"
    if not (store_dir / "manifest.json").exists():
        identity = ModelIdentity(
            "all-MiniLM-L6-v2", None, "benchmark-vectors", {"pooling": "mean", "dim": 384}
        )
        settings = {
            "dim": corpus.shape[1],
            "dtype": "float32",
            "normalized": True,
            "model": identity.to_dict(),
        }
        writer = StoreWriter.open(str(store_dir), settings, overwrite=True)
        for start in range(0, len(corpus), 100_000):
            block = np.asarray(corpus[start : start + 100_000])
            with writer.shard() as shard:
                ids = np.arange(start, start + len(block))
                shard.write(ids, [f"vector {i}" for i in ids.tolist()], block)
        writer.finish()
    output = cache / f"index-store-{len(corpus)}-{kind}"
    command = [sys.executable, "-m", "sbert", "index", "build", "--store", str(store_dir), "-o", str(output)]
    command += ["--kind", kind]
    start = time.perf_counter()
    subprocess.run(command, check=True, env=ENV)
    return {
        "command": " ".join(["sbert", *command[3:]]),
        "build_s": time.perf_counter() - start,
        "peak_rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
    }


def table(results: dict) -> str:
    """The results as a markdown table, one row per (size, kind, setting)."""
    lines = [
        "| vectors | kind | nprobe / efSearch | rescore × | recall@10 | p50 ms | p99 ms | batched q/s "
        "| RSS serving (peak) | index + rescore file on disk | build s | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, record in results.items():
        if "settings" not in record:
            continue
        size, kind = key.split("/")
        files = record["files"]
        disk = (files.get("index.faiss", 0) + files.get("ids.npy", 0)) / 2**20
        rescore = files.get("rescore.npy", 0) / 2**20
        for setting in record["settings"]:
            lines.append(
                f"| {size} | {kind} | {setting['nprobe_or_ef'] or '-'} | {setting['rescore_multiplier']} "
                f"| {setting['recall_at_10']:.3f} | {setting['p50_ms']:.2f} | {setting['p99_ms']:.2f} "
                f"| {setting['batched_qps']:.0f} | {record['rss_after_queries'] / 2**20:.0f} MiB "
                f"({record['peak_rss'] / 2**20:.0f}) | {disk:.0f} MiB + {rescore:.0f} MiB "
                f"| {record['build_s']:.0f} | {record.get('load_average_1m', 0):.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1000000", help="corpus size, or 'real' for the real-only set")
    parser.add_argument("--kinds", nargs="+", default=list(SETTINGS))
    parser.add_argument("--cache", type=Path, default=Path("/work/wt/cache/index_scale"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/index_scale.json"))
    parser.add_argument("--store-build", metavar="KIND", help="measure `sbert index build --store` instead")
    parser.add_argument("--table", action="store_true", help="print the results file as a markdown table")
    parser.add_argument(
        "--no-build",
        action="store_true",
        help="serve the index built by an earlier run (its build figures kept)",
    )
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--truth", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        print(json.dumps(serve(args.serve, args.cache, args.truth)))
        return
    if args.table:
        print(table(json.loads(args.out.read_text())))
        return
    corpus_file = args.cache / f"corpus-{args.size}.npy"
    truth_file = args.cache / f"truth-corpus-{args.size}.npy"
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    if args.store_build:
        record = store_build(corpus_file, args.cache, args.store_build)
        record["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        results[f"{args.size}/store-build-{args.store_build}"] = record
        print(json.dumps(record), file=sys.stderr)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
        return
    for kind in args.kinds:
        output = args.cache / f"index-{args.size}-{kind}"
        print(f"== {args.size} {kind}", file=sys.stderr)
        if args.no_build:
            built_before = results[f"{args.size}/{kind}"]
            record = {key: built_before[key] for key in ("build_s", "files", "params", "build_peak_rss")}
        else:
            record = build_in_child(kind, corpus_file, output)
        served = subprocess.run(
            [
                sys.executable,
                __file__,
                "--serve",
                str(output),
                "--cache",
                str(args.cache),
                "--truth",
                str(truth_file),
            ],
            check=True,
            capture_output=True,
            text=True,
            env=ENV,
        )
        record.update(json.loads(served.stdout.strip().splitlines()[-1]))
        record.update(
            {
                "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "machine": f"{platform.processor() or platform.machine()}, {THREADS} threads",
                "load_average_1m": os.getloadavg()[0],
                "command": " ".join(sys.argv),
            }
        )
        results[f"{args.size}/{kind}"] = record
        print(json.dumps(record), file=sys.stderr)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
