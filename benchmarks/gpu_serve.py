"""``sbert serve`` under load on one GPU beside direct ``encode()`` on the same GPU (issue 47, (b); ≤ 3 minutes).

A server process (``python -m sbert serve --device cuda``, the plan ``auto`` on PyTorch: the GPU
pipeline) and this process's own model load the same weights on the same GPU. benchmarks/serve_load.py's
closed loop (keep-alive HTTP/1.1 on 127.0.0.1, uvloop, base64 answers parsed with orjson) runs each
phase: 1 sentence a request at 1, 16 and 64 clients, then 32 sentences a request at 16 and 64;
each phase alternates with a direct ``model.encode(the same sentences)`` for ``--repeats`` rounds,
and the ratio is the median of the per-round ratios. STSb test's sentences, 8 times over, are the
sentences (from the carry folder, as benchmarks/gpu.py reads them). Every phase is bounded in
requests and in seconds (``--phase-seconds`` a side); a phase that would start after
``--budget-s`` is skipped; the JSON (``--output``) is written as each phase ends. Then issue 47's
done-means for serving, each printed as met or NOT met:

- the server ≥ 60% of direct ``encode()``'s sentences/s at 64 concurrent clients (32 sentences a
  request: what a client that batches sends; the one-sentence row at 64 is printed beside it);
- one query's HTTP round trip on loopback (1 client, 1 sentence) p50 ≤ 5 ms.

The GPU machine lacks the serve extra's starlette, uvicorn, httptools, orjson and pydantic (it has
httpx, uvloop, anyio, h11 and prometheus-client): ``--prepare`` puts their wheels, the versions
installed here, in the carry folder beside the model and STSb test (benchmarks/gpu.py's
``--prepare``, which it runs if the folder has no model yet). Here, once::

    SBERT_DATA=/work/shared/data PYTHONPATH=src python benchmarks/gpu_serve.py --prepare .gpu-carry

Then with the device tool (the wheels installed into /tmp/site first)::

    run(command="export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false;
        python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu-carry/wheels/*.whl
        && export PYTHONPATH=src:/tmp/site || exit; nvidia-smi -L | tee $OUT/serve.log;
        python3 benchmarks/gpu_serve.py --carry .gpu-carry --output $OUT/gpu_serve.json 2>&1 | tee -a $OUT/serve.log",
        carry=[".gpu-carry"], timeout_s=300)

``--phases 1x1,32x64`` runs only the two phases the done-means read (about 40 s on an H200, start-up
included). Each row also gives the load generator's own CPU over the server side's wall time
(``client CPU (cores)``): near 1.0 the client, one Python process, may be what caps the rate.

``--device cpu --sentences 256 --repeats 1`` runs the same code on a CPU (a smoke test of this
script, not a figure).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import uvloop

from alternating import alternating_order
from serve_load import HOST, Phase, Pool, _send, batch_totals

PASS_COPIES = 8  # STSb test's sentences 8 times over, as benchmarks/gpu.py
# (sentences a request, clients): serve_load.py's phases
PHASES = ((1, 1), (1, 16), (1, 64), (32, 16), (32, 64))
ONE_QUERY_REQUESTS = 400  # one sentence, one client: enough for a p50 and a p99
START_TIMEOUT = 120.0
# The serve extra's packages the GPU image lacks (it has httpx, uvloop, anyio, h11, prometheus-client).
WHEELS = (
    "starlette",
    "uvicorn",
    "httptools",
    "orjson",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-inspection",
    "typing-extensions",
)
# Issue 47's done-means for serving.
MIN_RATIO_AT_64 = 0.6
MAX_ONE_QUERY_P50_MS = 5.0


def prepare(carry: Path) -> None:
    """benchmarks/gpu.py's carry folder (model, STSb test), plus the serve extra's wheels it lacks."""
    import gpu

    if not (carry / "model").is_dir():
        gpu.prepare(carry)
    wheels = carry / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={version(name)}" for name in WHEELS]
    platforms = [f"--platform={tag}_x86_64" for tag in ("manylinux_2_28", "manylinux_2_17", "manylinux2014")]
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version=3.12",
    ]
    command += ["--implementation=cp", *platforms, "-d", str(wheels), *pins]
    subprocess.run(command, check=True)
    size = sum(path.stat().st_size for path in carry.rglob("*") if path.is_file())
    print(f"{carry}: {', '.join(pins)}; {size / 2**20:.1f} MiB in all (the device tool carries 64 MiB)")


def start_server(
    model: Path, device: str, log: Path, extra: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], int, dict[str, Any]]:
    """The server on a free loopback port, its /health once it answers (bounded: START_TIMEOUT)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port = int(sock.getsockname()[1])
    command = [
        sys.executable,
        "-m",
        "sbert",
        "serve",
        "--host",
        HOST,
        "--port",
        str(port),
        "--model",
        str(model),
    ]
    command += ["--device", device, "--precision", "auto", "--backend", "torch", "--max-queued-items", "8192"]
    command += list(extra)  # --server-args, e.g. --engine-process
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}:\n{log.read_text()}")
        try:
            health = httpx.get(f"http://{HOST}:{port}/health", timeout=1)
            if health.status_code == 200:
                return process, port, health.json()
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"the server did not start in {START_TIMEOUT:.0f} s:\n{log.read_text()}")


async def closed_loop(
    port: int, requests: list[list[str]], clients: int, phase: Phase, seconds: float
) -> None:
    """``clients`` clients share the requests, each sending its next when answered, until the
    requests or ``seconds`` run out (a request in flight then still finishes: at most 30 s)."""
    queue = iter(requests)
    pool = Pool(port, clients)
    start = time.perf_counter()

    async def client() -> None:
        for texts in queue:
            if time.perf_counter() - start > seconds:
                return
            await _send(pool, texts, phase, "base64")

    await asyncio.gather(*(client() for _ in range(clients)))
    phase.seconds += time.perf_counter() - start
    await pool.close()


def run_phase(
    model: Any, port: int, sentences: list[str], size: int, clients: int, args: argparse.Namespace
) -> dict[str, Any]:
    """One phase: the server and direct encode() of the same sentences, alternating, ``args.repeats``
    rounds; the ratio is the median of the rounds' (server sentences/s over direct's)."""
    count = ONE_QUERY_REQUESTS if (size, clients) == (1, 1) else args.sentences * (4 if size > 1 else 1)
    texts = sentences[: min(count, len(sentences))]
    requests = [texts[i : i + size] for i in range(0, len(texts), size)]
    served, direct = Phase(), Phase()
    before = batch_totals(port)
    ratios, client_cpu = [], 0.0
    for repeat in range(args.repeats):
        rates: dict[str, float] = {}
        for side in alternating_order(["direct", "server"], repeat):
            answered, start = served.sentences, time.perf_counter()
            if side == "direct":
                model.encode(texts, batch_size=32, show_progress_bar=False)
                direct.sentences += len(texts)
                direct.seconds += time.perf_counter() - start
                rates[side] = len(texts) / (time.perf_counter() - start)
            else:  # stops at --phase-seconds: the rate is what was answered by then
                own = time.process_time()
                uvloop.run(closed_loop(port, requests, clients, served, args.phase_seconds))
                client_cpu += time.process_time() - own
                rates[side] = (served.sentences - answered) / (time.perf_counter() - start)
        ratios.append(rates["server"] / rates["direct"])
    after = batch_totals(port)
    one_query = _one_query_ms(model, texts, args.phase_seconds) if (size, clients) == (1, 1) else None
    batches, merged_sentences, merged_requests = (a - b for a, b in zip(after, before))
    latencies = np.array(served.latencies) * 1000
    return {
        "sentences_a_request": size,
        "clients": clients,
        "sentences": len(texts),
        "server_sentences_per_s": served.rate,
        "direct_sentences_per_s": direct.rate,
        "ratio_to_direct": statistics.median(ratios),
        "latency_ms_p50_p95_p99": [float(x) for x in np.percentile(latencies, [50, 95, 99])]
        if len(latencies)
        else None,
        "statuses": dict(served.statuses),
        "direct_one_query_ms_p50_p99": one_query,
        "merged_batch_mean_requests_sentences": [merged_requests / batches, merged_sentences / batches]
        if batches
        else None,
        # The load generator's own CPU over the server sides' wall time: near 1.0, one core is
        # spent and the client, not the server, may be what caps the rate.
        "client_cpu_share_of_a_core": client_cpu / served.seconds if served.seconds else None,
    }


def _one_query_ms(model: Any, texts: list[str], seconds: float) -> list[float]:
    """Direct ``encode()`` of one sentence at a time, p50 and p99 in ms: the round trip without HTTP."""
    took: list[float] = []
    deadline = time.perf_counter() + seconds
    for text in texts:
        start = time.perf_counter()
        model.encode([text], show_progress_bar=False)
        took.append((time.perf_counter() - start) * 1000)
        if start > deadline:
            break
    return [float(x) for x in np.percentile(took, [50, 99])]


def done_means(phases: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    at_64 = phases.get("32x64")
    if at_64 is None:
        lines.append("done-means NOT met: the phase of 64 clients × 32 sentences did not run")
    else:
        one = phases.get("1x64", {}).get("ratio_to_direct")
        beside = f"; one sentence a request at 64 clients: {one:.2f}×" if one is not None else ""
        lines.append(
            _verdict(
                at_64["ratio_to_direct"] >= MIN_RATIO_AT_64,
                f"server at 64 clients (32 sentences a request) {at_64['server_sentences_per_s']:,.0f} sentences/s, "
                f"{at_64['ratio_to_direct']:.2f}× direct encode() (≥ {MIN_RATIO_AT_64:.2f}×){beside}",
            )
        )
    query = phases.get("1x1")
    if query is None or not query["latency_ms_p50_p95_p99"]:
        lines.append("done-means NOT met: the one-query phase did not run")
    else:
        p50 = query["latency_ms_p50_p95_p99"][0]
        direct = (query.get("direct_one_query_ms_p50_p99") or [float("nan")])[0]
        what = f"one query's HTTP round trip p50 {p50:.2f} ms (≤ {MAX_ONE_QUERY_P50_MS} ms)"
        lines.append(
            _verdict(p50 <= MAX_ONE_QUERY_P50_MS, f"{what}; direct encode() of one: {direct:.2f} ms")
        )
    return lines


def _row(row: dict[str, Any]) -> str:
    """| sentences a request | clients | server sentences/s | direct | ratio | p50/p95/p99 ms | statuses | merged |"""
    latency = " | ".join(f"{x:.2f}" for x in row["latency_ms_p50_p95_p99"] or [float("nan")] * 3)
    merged = row["merged_batch_mean_requests_sentences"] or [float("nan")] * 2
    return (
        f"| {row['sentences_a_request']} | {row['clients']} | {row['server_sentences_per_s']:,.0f} "
        f"| {row['direct_sentences_per_s']:,.0f} | {row['ratio_to_direct']:.2f}× | {latency} "
        f"| {row['statuses']} | {merged[0]:.1f} requests, {merged[1]:.1f} sentences "
        f"| {row.get('client_cpu_share_of_a_core') or float('nan'):.2f} |"
    )


def _phases(text: str) -> list[tuple[int, int]]:
    """``1x1,32x64`` → [(1, 1), (32, 64)]: sentences a request and clients of each phase, in order."""
    pairs = [tuple(int(n) for n in part.split("x")) for part in text.split(",") if part.strip()]
    if not pairs or any(len(pair) != 2 or min(pair) < 1 for pair in pairs):
        raise SystemExit(f"--phases {text!r}: give SIZExCLIENTS,... e.g. 1x1,32x64")
    return [(pair[0], pair[1]) for pair in pairs]


def _verdict(met: bool, what: str) -> str:
    return f"done-means {'met' if met else 'NOT met'}: {what}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--prepare", type=Path, help="write the carry folder (model, STSb test, wheels), then stop"
    )
    parser.add_argument("--carry", type=Path, default=Path(".gpu-carry"), help="what --prepare wrote")
    parser.add_argument("--device", default="cuda", help="cpu: a smoke test of this script")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=4096, help="sentences of a 32-a-request phase / 4")
    parser.add_argument("--phase-seconds", type=float, default=6.0, help="most seconds of one server side")
    parser.add_argument("--budget-s", type=float, default=170, help="skip phases that would start later")
    parser.add_argument(
        "--phases",
        default=",".join(f"{size}x{clients}" for size, clients in PHASES),
        help="SIZExCLIENTS,...: which phases (1x1,32x64: the two done-means, about 40 s on an H200)",
    )
    parser.add_argument("--output", type=Path, default=Path("gpu_serve.json"))
    parser.add_argument(
        "--server-args",
        default="",
        help='more `sbert serve` options, with "=": --server-args=--engine-process',
    )
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare)
        return
    started = time.perf_counter()
    import torch

    import gpu
    from sbert import SentenceEncoder
    from sbert.data import read_stsb

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("benchmarks/gpu_serve.py needs a CUDA GPU (or --device cpu for a smoke test)")
    if not (args.carry / "model").is_dir():
        raise SystemExit(
            f"{args.carry}/model not found: run benchmarks/gpu_serve.py --prepare {args.carry} first"
        )
    pairs = read_stsb("test", args.carry)
    sentences = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]) * PASS_COPIES
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "sbert-gpu-serve-benchmark"
    path, weights = gpu.model_dir(args.carry, work)
    log = work / "server.log"
    server, port, health = start_server(path, args.device, log, shlex.split(args.server_args))
    model = SentenceEncoder.from_pretrained(path, device=args.device, backend="torch")
    model.encode(sentences[:4096], show_progress_bar=False)  # the pipeline built, graphs captured
    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": torch.cuda.get_device_name()
        if args.device.startswith("cuda")
        else platform.processor() or "cpu",
        "host": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "server_args": args.server_args,
        "versions": {name: version(name) for name in ("torch", "transformers", "starlette", "uvicorn")},
        "weights": weights,
        "server_start_up": log.read_text().strip().splitlines(),
        "server_serving": health.get("serving"),
        "direct_plan": model.plan.to_dict(),
        "phases": {},
    }
    print(
        f"server: {health.get('serving')}\ndirect: {model.plan.precision} on {model.plan.device}", flush=True
    )
    print(
        "| sentences a request | clients | server sentences/s | direct encode() | ratio | p50 ms | p95 ms "
        "| p99 ms | statuses | merged batch (mean) | client CPU (cores) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for size, clients in _phases(args.phases):
            if time.perf_counter() - started > args.budget_s:
                result["phases"][f"{size}x{clients}"] = {"skipped": f"{args.budget_s:.0f} s spent before it"}
                continue
            row = run_phase(model, port, sentences, size, clients, args)
            result["phases"][f"{size}x{clients}"] = row
            result["seconds"] = time.perf_counter() - started
            args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
            print(_row(row), flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        result["server_exit_status"] = server.wait(60)
    result["done_means"] = done_means(result["phases"])
    result["seconds"] = time.perf_counter() - started
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\n{result['date']}, {result['device']} ({result['host']}); {weights}; {result['seconds']:.0f} s")
    print("\n".join(result["done_means"]))


if __name__ == "__main__":
    main()
