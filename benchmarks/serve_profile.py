"""Where a request's time goes in ``sbert serve`` under a closed loop: CPU per request of each server
thread (the event loop, the batcher, the inference threads), against direct ``encode()``.

A server process is started as ``benchmarks/serve_load.py`` starts it; C clients (default 16) send
one STSb test sentence a request, base64 answers, for ``--sentences`` sentences, ``--repeats``
times, alternating with a direct ``model.encode(same sentences, batch_size=32)`` in this process. Before
and after each server phase the CPU time of every server thread is read from
``/proc/PID/task/*/stat``: the main thread (uvicorn's event loop: HTTP, validation, JSON) apart from
the others (the batcher's thread: tokenizing, packing; OpenVINO's or PyTorch's inference threads),
whose CPU a sentence is compared with direct ``encode()``'s. Bounded: every phase stops after its
sentences, each request has a client timeout, and the server is stopped at the end.

    flock /tmp/sbert-heavy.lock python benchmarks/serve_profile.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import uvloop

from sbert import SentenceEncoder
from sbert.data import read_stsb
from serve_load import HOST, Phase, batch_totals, closed_loop, start_server

MAIN = "main thread (uvicorn's event loop: HTTP, validation, JSON)"
MODEL = "other threads (the batcher, inference)"


def thread_cpu(pid: int) -> Counter:
    """CPU seconds so far of a process's main thread and of all its other threads together."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals: Counter = Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # Python 3.11 gives its threads no OS name: the batcher's thread is told from the inference
        # threads by nothing /proc shows, so those are counted together.
        group = MAIN if int(task.name) == pid else MODEL
        totals[group] += (int(fields[11]) + int(fields[12])) / ticks
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--model", default=None)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--server-args", default="")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--sentences", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default="benchmarks/results/serve_profile.json")
    args = parser.parse_args()

    pairs = read_stsb("test", args.data_dir)
    texts = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs])[: args.sentences]
    model = SentenceEncoder.from_pretrained(
        args.model, device="cpu", precision=args.precision, backend=args.backend
    )
    model.encode(texts[:256], show_progress_bar=False)
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port = sock.getsockname()[1]
    server = start_server(args, port)
    requests = [[text] for text in texts]
    cpu: Counter = Counter()
    timings: dict[str, list[float]] = {"direct": [], "server": []}
    direct_cpu = 0.0
    phase = Phase()
    try:
        uvloop.run(closed_loop(port, requests[:256], args.concurrency, Phase()))  # warm the connections
        before_batches = batch_totals(port)
        for repeat in range(args.repeats):
            for side in ("direct", "server") if repeat % 2 == 0 else ("server", "direct"):
                start, own = time.perf_counter(), time.process_time()
                if side == "direct":
                    model.encode(texts, batch_size=32, show_progress_bar=False)
                    direct_cpu += time.process_time() - own
                else:
                    threads = thread_cpu(server.pid)
                    uvloop.run(closed_loop(port, requests, args.concurrency, phase))
                    cpu += thread_cpu(server.pid) - threads
                timings[side].append(time.perf_counter() - start)
        batches = [a - b for a, b in zip(batch_totals(port), before_batches)]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    served = args.repeats * len(texts)
    ratio = statistics.median(d / s for d, s in zip(timings["direct"], timings["server"]))
    per_request = {group: 1000 * seconds / served for group, seconds in cpu.most_common()}
    wall = 1000 * sum(timings["server"]) / served
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    result = {
        "date": stamp,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "model": model.name,
        "precision": model.precision,
        "backend": model.backend,
        "concurrency": args.concurrency,
        "ratio_to_encode": ratio,
        "wall_ms_per_request": wall,
        "cpu_ms_per_request_by_thread": per_request,
        "direct_cpu_ms_per_sentence": 1000 * direct_cpu / served,
        "merged_batch_requests": batches[2] / batches[0],
        "statuses": dict(phase.statuses),
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{stamp}; {model.name} {model.precision} ({model.backend}); concurrency {args.concurrency}")
    print(f"ratio to direct encode (median of {args.repeats}): {ratio:.2f}x; wall {wall:.2f} ms a request")
    for group, ms in per_request.items():
        print(f"  {group}: {ms:.2f} ms CPU a request")
    print(f"  direct encode(): {result['direct_cpu_ms_per_sentence']:.2f} ms CPU a sentence")


if __name__ == "__main__":
    main()
