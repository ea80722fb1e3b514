"""Encoding a corpus to disk: flat memory, streaming overhead, Ray overhead, resume after kill -9.

Mixed-length sentences from the shared data (encode_speed.mixed_sentences, repeated as needed),
the bundled all-MiniLM-L6-v2, each phase appending its figures to ``--results`` (JSON):

- ``memory``: peak RSS of a child process running ``encode_corpus`` into a store, for each
  ``--sizes`` × ``--precisions``; the claim is peak(1M) ≤ 1.2 × peak(100k).
- ``throughput``: ``encode_corpus`` (streaming, to a store) vs in-memory ``encode()`` on the same
  sentences, same precision, alternating, median.
- ``ray``: local streaming vs ``--engine ray`` with 1 and 2 actors on a local Ray instance
  (``ray.init`` once; actor start-up and model loading are inside each timed run).
- ``lookup``: a synthetic store of ``--lookup-rows`` random 384-d float32 rows (no model): latency of
  ``texts(ids)`` and ``vectors(rows)`` for 10 and 100 random rows on a freshly opened store (median
  of 20), and ``iter_batches`` rows/s.
- ``kill``: a child killed with SIGKILL once it has finished 1/4, 1/2 and 3/4 of the rows, resumed
  each time; every shard must be byte-identical to an uninterrupted run's.

    flock /tmp/sbert-heavy.lock python benchmarks/corpus_encode.py kill throughput ray memory \\
        --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from encode_speed import cpu_name, mixed_sentences

HERE = Path(__file__).resolve().parent
PHASES = ("kill", "throughput", "ray", "memory", "lookup")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phases", nargs="+", choices=(*PHASES, "child"))
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--precisions", nargs="+", default=["float32", "auto"])
    parser.add_argument("--throughput-size", type=int, default=100_000)
    parser.add_argument("--throughput-precision", default="auto")
    parser.add_argument("--ray-size", type=int, default=20_000)
    parser.add_argument("--kill-size", type=int, default=4_000)
    parser.add_argument("--lookup-rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--results", default=str(HERE / "corpus_encode.json"))
    parser.add_argument("--workdir", default=None, help="scratch folder (default: a new temporary one)")
    # child: one encode_corpus run in this process, peak RSS printed as JSON
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="float32", help=argparse.SUPPRESS)
    parser.add_argument("--shard-size", type=int, default=100_000, help=argparse.SUPPRESS)
    parser.add_argument("--chunk-rows", type=int, default=10_000, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phases == ["child"]:
        child(args)
        return
    work = Path(args.workdir or tempfile.mkdtemp(prefix="sbert-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    for phase in args.phases:
        started = time.perf_counter()
        run = {"kill": kill, "throughput": throughput, "ray": ray_phase, "memory": memory, "lookup": lookup}[
            phase
        ]
        figures = run(args, work)
        record(args.results, phase, {**figures, "wall_s": round(time.perf_counter() - started, 1)})
    shutil.rmtree(work, ignore_errors=True)


def corpus(args: argparse.Namespace, work: Path, size: int) -> Path:
    """A text file of ``size`` mixed-length sentences (the distinct ones repeated as needed)."""
    path = work / f"corpus-{size}.txt"
    if not path.exists():
        distinct = mixed_sentences(args.data_dir, min(size, 40_000))
        with path.open("w", encoding="utf-8") as handle:
            for row in range(size):
                handle.write(distinct[row % len(distinct)] + "\n")
    return path


def child(args: argparse.Namespace) -> None:
    from sbert import SentenceEncoder
    from sbert.store import CorpusOptions, encode_corpus

    model = SentenceEncoder.from_pretrained(device="cpu", precision=args.precision)
    started = time.perf_counter()
    store = encode_corpus(
        model,
        args.input,
        args.output,
        CorpusOptions(
            dtype=args.dtype, shard_size=args.shard_size, chunk_rows=args.chunk_rows, show_progress=False
        ),
    )
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: KiB
    print(
        json.dumps(
            {
                "rows": len(store),
                "seconds": seconds,
                "peak_rss_mib": peak_kib / 1024,
                "ran_as": model.precision,
            }
        )
    )


def child_command(args: argparse.Namespace, source: Path, output: Path, **options: Any) -> list[str]:
    command = [sys.executable, str(Path(__file__).resolve()), "child", "--input", str(source)]
    command += ["--output", str(output)]
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    return command


def memory(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for precision in args.precisions:
        for size in sorted(args.sizes):
            source, output = corpus(args, work, size), work / f"store-{precision}-{size}"
            shutil.rmtree(output, ignore_errors=True)
            done = subprocess.run(
                child_command(args, source, output, precision=precision),
                check=True,
                capture_output=True,
                text=True,
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result["sentences_per_s"] = round(result["rows"] / result["seconds"], 1)
            figures[f"{precision} {size}"] = result
            print(f"memory {precision} {size}: {result}", flush=True)
            shutil.rmtree(output, ignore_errors=True)
            record(args.results, "memory (partial)", figures)
        sizes = sorted(args.sizes)
        if len(sizes) > 1:
            ratio = (
                figures[f"{precision} {sizes[-1]}"]["peak_rss_mib"]
                / figures[f"{precision} {sizes[0]}"]["peak_rss_mib"]
            )
            figures[f"{precision} peak ratio {sizes[-1]}/{sizes[0]}"] = round(ratio, 3)
    return figures


def throughput(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from alternating import alternating_rates
    from sbert import SentenceEncoder
    from sbert.store import CorpusOptions, encode_corpus

    size = args.throughput_size
    source = corpus(args, work, size)
    texts = source.read_text(encoding="utf-8").splitlines()
    model = SentenceEncoder.from_pretrained(device="cpu", precision=args.throughput_precision)
    model.encode(texts[:2000], show_progress_bar=False)  # warm-up (and int8 calibration)
    runners = {
        "in-memory encode()": lambda: model.encode(texts, show_progress_bar=False),
        "streaming encode_corpus()": lambda: encode_corpus(
            model, source, work / "throughput-store", CorpusOptions(overwrite=True, show_progress=False)
        ),
    }
    rates = alternating_rates(runners, args.repeats, size)
    figures, medians = rate_figures(rates, size, model.precision)
    figures["ratio streaming / in-memory"] = round(
        medians["streaming encode_corpus()"] / medians["in-memory encode()"], 3
    )
    print(f"throughput: {figures}", flush=True)
    return figures


def ray_phase(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import ray

    from alternating import alternating_rates
    from sbert import SentenceEncoder
    from sbert.store import CorpusOptions, encode_corpus

    size = args.ray_size
    source = corpus(args, work, size)
    model = SentenceEncoder.from_pretrained(device="cpu", precision=args.throughput_precision)
    model.encode(["warm up"] * 64, show_progress_bar=False)
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        runners = {
            "local streaming": lambda: encode_corpus(
                model, source, work / "ray-local", CorpusOptions(overwrite=True, show_progress=False)
            ),
            "ray, 1 actor": lambda: encode_corpus(
                model,
                source,
                work / "ray-1",
                CorpusOptions(overwrite=True, show_progress=False, engine="ray", workers=1),
            ),
            "ray, 2 actors": lambda: encode_corpus(
                model,
                source,
                work / "ray-2",
                CorpusOptions(overwrite=True, show_progress=False, engine="ray", workers=2),
            ),
        }
        rates = alternating_rates(runners, args.repeats, size)
        tiny = corpus(args, work, 64)
        startup = []  # a run on 64 sentences: actor start-up and model loading, nearly no encoding
        for _ in range(args.repeats):
            started = time.perf_counter()
            encode_corpus(
                model,
                tiny,
                work / "ray-tiny",
                CorpusOptions(overwrite=True, show_progress=False, engine="ray", workers=1),
            )
            startup.append(time.perf_counter() - started)
    finally:
        ray.shutdown()
    figures, medians = rate_figures(rates, size, model.precision)
    figures["ratio ray 1 actor / local"] = round(medians["ray, 1 actor"] / medians["local streaming"], 3)
    figures["ratio ray 2 actors / local"] = round(medians["ray, 2 actors"] / medians["local streaming"], 3)
    figures["ray run on 64 sentences (start-up) s"] = round(statistics.median(startup), 1)
    # What one actor encodes once started: the figure to multiply by workers on a cluster.
    one_actor_seconds = size / medians["ray, 1 actor"] - figures["ray run on 64 sentences (start-up) s"]
    figures["ray 1 actor after start-up, sentences/s"] = round(size / max(one_actor_seconds, 1e-9), 1)
    print(f"ray: {figures}", flush=True)
    return figures


def rate_figures(
    rates: dict[str, list[float]], size: int, precision: str
) -> tuple[dict[str, Any], dict[str, float]]:
    """Per-repeat and median sentences/s of each runner, and the medians for ratios."""
    medians = {name: statistics.median(values) for name, values in rates.items()}
    figures = {
        "sentences": size,
        "precision": precision,
        "repeats": len(next(iter(rates.values()))),
        "rates": {name: [round(v, 1) for v in values] for name, values in rates.items()},
        "median": {name: round(v, 1) for name, v in medians.items()},
    }
    return figures, medians


def kill(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    size = args.kill_size
    shard = max(1, size // 8)
    source = corpus(args, work, size)
    options = {"precision": "float32", "shard_size": shard, "chunk_rows": max(1, shard // 2)}
    whole = work / "kill-whole"
    shutil.rmtree(whole, ignore_errors=True)
    subprocess.run(child_command(args, source, whole, **options), check=True, capture_output=True)
    figures: dict[str, Any] = {"sentences": size, "shard_size": shard, "points": []}
    for fraction in (0.25, 0.5, 0.75):
        store = work / f"kill-{fraction}"
        shutil.rmtree(store, ignore_errors=True)
        process = subprocess.Popen(
            child_command(args, source, store, **options),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while finished_rows(store) < fraction * size and process.poll() is None:
            time.sleep(0.01)
        while not list(store.glob(".shard-*.tmp")) and process.poll() is None:
            time.sleep(0.01)  # kill inside the next shard, half written
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed_at = finished_rows(store)
        leftovers = sorted(p.name for p in store.glob(".*.tmp"))
        subprocess.run(child_command(args, source, store, **options), check=True, capture_output=True)
        shards = sorted(p.name for p in whole.glob("*.parquet"))
        same = shards == sorted(p.name for p in store.glob("*.parquet")) and all(
            (store / name).read_bytes() == (whole / name).read_bytes() for name in shards
        )
        no_temporaries = not list(store.glob(".*.tmp"))
        point = {
            "killed_after_rows": killed_at,
            "temporary_files_at_kill": leftovers,
            "byte_identical": same,
            "cleaned": no_temporaries,
        }
        figures["points"].append(point)
        print(f"kill at {fraction}: {point}", flush=True)
    return figures


def lookup(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import numpy as np

    from sbert.store import EmbeddingStore, StoreWriter

    rows, dim, shard_size = args.lookup_rows, 384, 100_000
    path = work / "lookup-store"
    shutil.rmtree(path, ignore_errors=True)
    rng = np.random.default_rng(0)
    identity = {"name": "synthetic", "source": None, "fingerprint": "0" * 64, "pipeline": {}}
    writer = StoreWriter.open(
        str(path), {"dim": dim, "dtype": "float32", "normalized": False, "model": identity}
    )
    for start in range(0, rows, shard_size):
        with writer.shard() as shard:
            for chunk in range(start, min(start + shard_size, rows), 10_000):
                ids = np.arange(chunk, min(chunk + 10_000, rows))
                vectors = rng.standard_normal((len(ids), dim), dtype=np.float32)
                shard.write(ids, [f"sentence number {i}" for i in ids], vectors)
    writer.finish()
    figures: dict[str, Any] = {"rows": rows, "dim": dim, "dtype": "float32", "row_group_size": 256}
    for count in (10, 100):
        for what in ("texts", "vectors"):
            times = []
            for _ in range(20):
                wanted = rng.choice(rows, size=count, replace=False)
                store = EmbeddingStore.open(str(path))  # fresh: no row group cached
                started = time.perf_counter()
                getattr(store, what)(wanted)
                times.append(time.perf_counter() - started)
            figures[f"{what}({count} random) ms"] = round(statistics.median(times) * 1000, 2)
    store = EmbeddingStore.open(str(path))
    started = time.perf_counter()
    total = sum(len(batch.ids) for batch in store.iter_batches(65536))
    figures["iter_batches rows/s"] = round(total / (time.perf_counter() - started))
    print(f"lookup: {figures}", flush=True)
    shutil.rmtree(path, ignore_errors=True)
    return figures


def finished_rows(store: Path) -> int:
    try:
        return int(json.loads((store / "manifest.json").read_text())["rows"])
    except (OSError, ValueError, KeyError):
        return 0


def record(path: str, phase: str, figures: dict[str, Any]) -> None:
    results = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    results[phase] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cpu_name()}, {os.cpu_count()} cores",
        **figures,
    }
    Path(path).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
