"""Concurrent ``/rerank`` through ``sbert serve --cross-encoder`` against direct ``CrossEncoder.predict``.

The cross-encoder is the bundled all-MiniLM-L6-v2 with a new one-label head (seeded, as
``cross_encoder_speed.py`` makes it), saved once; the server loads it beside the bundled dense model
and this process loads it for the direct side, both with the default plan. Closed loop: C clients
(keep-alive, ``serve_load.Pool``) each send their next request as soon as the last one is answered,
Cohere's body with one STSb test ``sentence1`` as the query and D ``sentence2`` as the documents,
until the phase's pairs are sent. Each repeat alternates the order of the sides: the server, the
direct side (one ``predict(all the phase's pairs, batch_size=32)``: the ideal a server can reach)
and, with ``--landed-src``, a second server running another source tree (the code before /rerank
was merged on the batcher: each request a ``predict`` of its own). Figures are medians of the
repeats; each ratio is taken per repeat. The merged batches come from the server's /metrics.

    git archive BASE src | tar -x -C /tmp/landed   # the code as it was, to compare with
    flock /tmp/sbert-heavy.lock python benchmarks/serve_rerank.py --data-dir ../shared/data \\
        --landed-src /tmp/landed/src
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import orjson
import torch
import uvloop

from alternating import alternating_order
from sbert import CrossEncoder
from sbert.data import read_stsb
from serve_load import CLIENT_TIMEOUT, HOST, Pool, wait_ready

SRC = Path(__file__).resolve().parents[1] / "src"
PAIR_BATCHES = 'sbert_batches_total{kind="pairs"}'


def start_server(src: Path, cross_encoder: Path) -> tuple[subprocess.Popen, int]:
    """``sbert serve`` from the source tree ``src``, the bundled model and ``cross_encoder``."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port = int(sock.getsockname()[1])
    command = [sys.executable, "-m", "sbert", "serve", "--host", HOST, "--port", str(port)]
    command += ["--cross-encoder", str(cross_encoder), "--log-level", "warning"]
    environment = {**os.environ, "PYTHONPATH": str(src)}
    process = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True)
    return wait_ready(process, port), port


async def closed_loop(port: int, requests: list[tuple[str, list[str]]], concurrency: int) -> None:
    """``concurrency`` clients share the requests; each sends its next one when answered."""
    queue = iter(requests)
    pool = Pool(port, concurrency)

    async def worker() -> None:
        for query, documents in queue:
            body = {"query": query, "documents": documents}
            status, content = await asyncio.wait_for(pool.post("/rerank", body), CLIENT_TIMEOUT)
            assert status == 200 and len(orjson.loads(content)["results"]) == len(documents), content[:200]

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await pool.close()


def pair_batches(port: int) -> tuple[float, float]:
    """The server's merged batches of pairs so far, and the requests of all its merged batches."""
    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as response:
        lines = response.read().decode().splitlines()
    values = dict(line.rsplit(" ", 1) for line in lines if line and not line.startswith("#"))
    return float(values.get(PAIR_BATCHES, 0)), float(values.get("sbert_batch_requests_sum", 0))


def measure(args: argparse.Namespace, folder: Path) -> dict:
    stsb = read_stsb("test", args.data_dir)
    count = args.pairs // args.documents
    requests = [
        (stsb[i].sentence1, [p.sentence2 for p in stsb[i * args.documents : (i + 1) * args.documents]])
        for i in range(count)
    ]
    pairs = [(query, document) for query, documents in requests for document in documents]
    model = CrossEncoder(folder, device="cpu")
    model.predict(pairs[:64], batch_size=32, show_progress_bar=False)  # compile
    servers = {"server": start_server(SRC, folder)}
    if args.landed_src:
        servers["landed server"] = start_server(Path(args.landed_src), folder)
    seconds: dict[str, list[float]] = {name: [] for name in ["direct", *servers]}
    merged = [0.0, 0.0]
    try:
        for _, port in servers.values():  # warm-up: first requests, first shapes
            uvloop.run(closed_loop(port, requests[:32], args.concurrency))
        for repeat in range(args.repeats):
            for side in alternating_order(list(seconds), repeat):
                before = pair_batches(servers[side][1]) if side == "server" else (0.0, 0.0)
                start = time.perf_counter()
                if side == "direct":
                    model.predict(pairs, batch_size=32, show_progress_bar=False)
                else:
                    uvloop.run(closed_loop(servers[side][1], requests, args.concurrency))
                seconds[side].append(time.perf_counter() - start)
                if side == "server":
                    after = pair_batches(servers[side][1])
                    merged = [m + a - b for m, a, b in zip(merged, after, before)]
    finally:
        for process, _ in servers.values():
            process.kill()
            process.wait(30)
    rates = {name: statistics.median(len(pairs) / s for s in times) for name, times in seconds.items()}
    ratios = {
        name: statistics.median(d / s for d, s in zip(seconds["direct"], seconds[name])) for name in servers
    }
    if args.landed_src:
        ratios["server / landed server"] = statistics.median(
            o / s for s, o in zip(seconds["server"], seconds["landed server"])
        )
    return {
        "pairs_per_s": rates,
        "ratio_to_predict": ratios,
        "requests_per_pair_batch": merged[1] / merged[0] if merged[0] else None,
        "plan": f"{model.plan.precision} ({model.plan.backend})",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--documents", type=int, default=8, help="documents per /rerank request")
    parser.add_argument("--pairs", type=int, default=512, help="pairs per phase")
    parser.add_argument("--landed-src", default=None, help="a second server from this source tree")
    parser.add_argument("--output", default="benchmarks/serve_rerank.json", help="JSON file for the figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "cross-encoder"
        torch.manual_seed(0)
        CrossEncoder.from_pretrained(num_labels=1, device="cpu", precision="float32").save(folder)
        result = measure(args, folder)
    result.update(
        {
            "machine": platform.processor() or platform.machine(),
            "torch_threads": torch.get_num_threads(),
            "date": datetime.now(timezone.utc).date().isoformat(),
            "concurrency": args.concurrency,
            "documents_per_request": args.documents,
            "pairs": args.pairs,
            "repeats": args.repeats,
        }
    )
    print(json.dumps(result, indent=2))
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
