"""The server with its forward passes on the batcher's thread against ``--engine-process``, both
against direct ``encode()``, in one run: two servers on the same model, each closed-loop phase
alternating with the other and with a direct ``model.encode(same sentences, batch_size=32)`` in
this process, ``--repeats`` rounds, median of the per-round ratios (issue 53).

    flock /tmp/sbert-heavy.lock env OMP_NUM_THREADS=1 SBERT_DATA=/work/shared/data PYTHONPATH=src:benchmarks \\
        python benchmarks/serve_engine.py --standin --concurrency 64 --size 32 --format base64

The load generator is ``benchmarks/serve_load.py``'s (asyncio streams on uvloop, on the same cores);
the CPU seconds of each server (the engine process included) and of the client are summed per side;
``--threads`` also prints each server's CPU seconds by thread, over the timed phases.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil
import uvloop

from alternating import alternating_order
from sbert import SentenceEncoder
from sbert.data import read_stsb
from serve_load import HOST, Phase, closed_loop, run_on_model, start_server

SIDES = {"thread": "", "engine": "--engine-process"}


def thread_seconds(work: Path, pid: int) -> dict[str, float]:
    """A server's CPU seconds so far by thread (``--threads``; empty without), read once settled."""
    path = work / f"cpu.{pid}.json"
    if not path.is_file():
        return {}
    time.sleep(0.3)  # the file is written every 0.25 s
    return json.loads(path.read_text())


def cpu_with_children(pid: int) -> float:
    """User + system CPU seconds so far of a process and its children (the engine)."""
    process = psutil.Process(pid)
    return sum(sum(each.cpu_times()[:2]) for each in [process, *process.children(recursive=True)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--model", default=None, help="model (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--standin", action="store_true", help="the 1-layer stand-in (benchmarks/standin.py)")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--size", type=int, default=32, help="sentences per request")
    parser.add_argument("--format", default="base64", help="encoding_format: base64 or float")
    parser.add_argument("--sentences", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default="benchmarks/results/serve_engine.json")
    parser.add_argument(
        "--threads", action="store_true", help="each server's CPU seconds by thread (benchmarks/thread_cpu)"
    )
    run_on_model(parser.parse_args(), run)


def run(args: argparse.Namespace) -> None:
    pairs = read_stsb("test", args.data_dir)
    texts = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs])[: args.sentences]
    requests = [texts[i : i + args.size] for i in range(0, len(texts), args.size)]
    model = SentenceEncoder.from_pretrained(
        args.model, device="cpu", precision=args.precision, backend=args.backend
    )
    model.encode(texts[:256], show_progress_bar=False)
    servers = {}
    work = Path(tempfile.mkdtemp(prefix="sbert-thread-cpu-"))
    if args.threads:  # the servers inherit it
        os.environ["SBERT_THREAD_CPU"] = str(work / "cpu")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(Path(__file__).parent / "thread_cpu"), os.environ.get("PYTHONPATH", "")]
        )
    try:
        for side, extra in SIDES.items():
            with socket.socket() as sock:
                sock.bind((HOST, 0))
                port = sock.getsockname()[1]
            servers[side] = (
                start_server(argparse.Namespace(**{**vars(args), "server_args": extra}), port),
                port,
            )
            uvloop.run(closed_loop(port, requests[:16], 8, Phase(), args.format))  # warm the connections
        seconds: dict[str, list[float]] = {name: [] for name in ["direct", *SIDES]}
        cpu = dict.fromkeys(seconds, 0.0)
        phases = {side: Phase() for side in SIDES}
        threads: dict[str, dict[str, float]] = {side: {} for side in seconds}  # CPU seconds by thread
        for repeat in range(args.repeats):
            for side in alternating_order(["direct", *SIDES], repeat):
                process, port = servers.get(side, (None, 0))
                pid = process.pid if process is not None else 0
                threads_before = thread_seconds(work, pid)  # outside the timed part: it sleeps
                start, own = time.perf_counter(), time.process_time()
                if process is None:
                    model.encode(texts, batch_size=32, show_progress_bar=False)
                else:
                    before = cpu_with_children(pid)
                    uvloop.run(closed_loop(port, requests, args.concurrency, phases[side], args.format))
                    cpu[side] += cpu_with_children(pid) - before
                seconds[side].append(time.perf_counter() - start)
                cpu[side] += time.process_time() - own
                for name, spent in thread_seconds(work, pid).items():
                    threads[side][name] = threads[side].get(name, 0.0) + spent - threads_before.get(name, 0.0)
    finally:
        for process, _ in servers.values():
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    report(args, model, seconds, cpu, phases, len(texts))
    for name, each in threads.items():  # the engine process has no `serve` argument: not counted
        if not each:
            continue
        print(
            f"  threads of {name}: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(each.items(), key=lambda kv: -kv[1]))
        )


def report(
    args: argparse.Namespace,
    model: SentenceEncoder,
    seconds: dict[str, list[float]],
    cpu: dict[str, float],
    phases: dict[str, Phase],
    sentences: int,
) -> None:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = {}
    for side in SIDES:
        rows[side] = {
            "ratio_to_encode": statistics.median(d / s for d, s in zip(seconds["direct"], seconds[side])),
            "sentences_per_s": statistics.median(sentences / s for s in seconds[side]),
            "cpu_over_direct": cpu[side] / cpu["direct"],
            "statuses": dict(phases[side].statuses),
        }
    direct = statistics.median(sentences / s for s in seconds["direct"])
    result = {
        "date": stamp,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "load_average": os.getloadavg(),
        "model": "stand-in" if args.standin else model.name,
        "precision": model.precision,
        "backend": model.backend,
        "concurrency": args.concurrency,
        "size": args.size,
        "format": args.format,
        "repeats": args.repeats,
        "direct_sentences_per_s": direct,
        "servers": rows,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"{stamp}; {result['model']} {model.precision} ({model.backend}); {args.concurrency} clients × "
        f"{args.size}, {args.format}; load average {os.getloadavg()[0]:.1f}; direct {direct:.0f}/s"
    )
    for side, row in rows.items():
        print(
            f"  {side}: {row['sentences_per_s']:.0f}/s, {row['ratio_to_encode']:.2f}× of direct encode(), "
            f"CPU {row['cpu_over_direct']:.2f}× direct's, statuses {row['statuses']}"
        )


if __name__ == "__main__":
    main()
