"""Load test of ``sbert serve``: throughput against direct ``encode()``, latency, and a 2× overload.

A server process is started on 127.0.0.1 with the model and precision given; this process loads the
same model for the direct side. Closed loop: C clients (asyncio streams, keep-alive) each send their
next request as soon as the last one is answered, with 1 or 32 STSb test sentences per request, until
the phase's sentences (the first 1024; 400 for one sentence at concurrency 1) are sent, asking for
each of ``--formats`` in turn (``base64``: little-endian float32, as the openai client asks;
``float``: JSON numbers, OpenAI's default); each phase alternates the formats with a direct
``model.encode(same sentences, batch_size=32)`` for ``--repeats`` rounds, so the ratios compare the
sides under the same machine noise (median of the per-round ratios, float to base64 too). The client
parses every answer with orjson, whatever the format. Open loop (base64): requests
of one sentence sent at twice the best closed-loop rate for ``--flood-seconds``, whatever the answers,
and from the moment the sending stops a closed-loop probe at concurrency 16 counts, second by second,
the sentences answered, to see when throughput is back. The load generator runs on uvloop, as the
server does, so that it takes as little of the shared cores as it can.
Everything is bounded: each phase stops after its sentences or its seconds, every request has a
client timeout, and the server is stopped at the end.

    flock /tmp/sbert-heavy.lock python benchmarks/serve_load.py --data-dir ../shared/data

``--standin`` serves the 1-layer stand-in (``benchmarks/standin.py``) instead, whose forward pass
costs almost nothing: a CPU proxy of the host's share of a GPU server (issue 53)::

    flock /tmp/sbert-heavy.lock python benchmarks/serve_load.py --standin --concurrency 64 \
        --sizes 32 --formats base64 --no-flood --repeats 5 --output benchmarks/results/serve_standin.json
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
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import httpx
import numpy as np
import orjson
import uvloop

from alternating import alternating_order
from sbert import SentenceEncoder
from sbert.data import read_stsb
from standin import bundled_standin

HOST = "127.0.0.1"  # the load never leaves this machine
CLIENT_TIMEOUT = 30.0
PROBE_SECONDS = 8


@dataclass
class Phase:
    """What one load phase saw: answered sentences, latencies of 200s, statuses (or error names)."""

    sentences: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.sentences / self.seconds if self.seconds else 0.0


class Pool:
    """Keep-alive HTTP/1.1 connections to the server, opened as needed (at most ``size``).

    A minimal client on asyncio streams rather than httpx: on a 2-core machine the load generator
    shares the cores with the server, and httpx spends several times more CPU per request.
    """

    def __init__(self, port: int, size: int) -> None:
        self.port, self.free = port, asyncio.Queue()  # type: ignore[var-annotated]
        for _ in range(size):
            self.free.put_nowait(None)  # a slot; the connection is opened on first use

    async def post(self, path: str, payload: dict) -> tuple[int, bytes]:
        connection = await self.free.get()
        body = json.dumps(payload).encode()
        try:
            # The server closes keep-alive connections idle for 5 s (uvicorn's default); like any
            # HTTP client, send again once on a new connection when a reused one turns out closed.
            for attempt in range(2):
                reused = connection is not None
                if connection is None:
                    connection = await asyncio.open_connection(HOST, self.port)
                try:
                    status, content, keep = await self._exchange(connection, path, body)
                    if not keep:
                        connection[1].close()
                        connection = None
                    return status, content
                except (asyncio.IncompleteReadError, ConnectionError) as error:
                    connection[1].close()
                    connection = None
                    if not reused or attempt or getattr(error, "partial", b""):
                        raise
            raise AssertionError("unreachable")
        except BaseException:
            if connection is not None:
                connection[1].close()
            connection = None
            raise
        finally:
            self.free.put_nowait(connection)

    @staticmethod
    async def _exchange(connection: tuple, path: str, body: bytes) -> tuple[int, bytes, bool]:
        reader, writer = connection
        head = f"POST {path} HTTP/1.1\r\nhost: {HOST}\r\ncontent-type: application/json\r\n"
        writer.write(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)
        header = (await reader.readuntil(b"\r\n\r\n")).lower()
        length = int(header.split(b"content-length:")[1].split(b"\r\n")[0])
        content = await reader.readexactly(length)
        return int(header[9:12]), content, b"connection: close" not in header

    async def close(self) -> None:
        while not self.free.empty():
            connection = self.free.get_nowait()
            if connection is not None:
                connection[1].close()


async def _send(pool: Pool, texts: list[str], phase: Phase, encoding_format: str = "base64") -> None:
    start = time.perf_counter()
    try:
        status, content = await asyncio.wait_for(
            pool.post("/v1/embeddings", {"input": texts, "encoding_format": encoding_format}), CLIENT_TIMEOUT
        )
    except asyncio.TimeoutError:
        phase.statuses["timeout"] += 1
        return
    except (OSError, asyncio.IncompleteReadError) as error:
        phase.statuses[type(error).__name__] += 1
        return
    phase.statuses[str(status)] += 1
    if status == 200:
        assert len(orjson.loads(content)["data"]) == len(texts)
        phase.latencies.append(time.perf_counter() - start)
        phase.sentences += len(texts)


async def closed_loop(
    port: int, requests: list[list[str]], concurrency: int, phase: Phase, encoding_format: str = "base64"
) -> None:
    """``concurrency`` clients share the request list; each sends its next one when answered."""
    queue = iter(requests)
    pool = Pool(port, concurrency)

    async def worker() -> None:
        for texts in queue:
            await _send(pool, texts, phase, encoding_format)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    phase.seconds += time.perf_counter() - start
    await pool.close()


async def open_loop(
    port: int, sentences: list[str], rate: float, seconds: float, phase: Phase, pid: int, rss: list[float]
) -> tuple[float, list[int]]:
    """One-sentence requests at ``rate`` per second for ``seconds``, answered or not.

    Returns the rate sent and, from the moment sending stops, the :func:`probe` counts (the flood's
    last answers still arriving meanwhile). The server's resident memory is appended to ``rss``
    every half second.
    """
    pool = Pool(port, 2048)
    tasks = []
    start = time.perf_counter()
    sent, sampled = 0, 0.0
    while (now := time.perf_counter() - start) < seconds:
        if now - sampled >= 0.5:
            rss.append(rss_mib(pid))
            sampled = now
        due = int(now * rate) + 1
        while sent < due:
            tasks.append(asyncio.create_task(_send(pool, [sentences[sent % len(sentences)]], phase)))
            sent += 1
        await asyncio.sleep(0.002)
    send_seconds = time.perf_counter() - start
    per_second = await probe(port, sentences, PROBE_SECONDS)
    await asyncio.gather(*tasks)
    rss.append(rss_mib(pid))
    phase.seconds = time.perf_counter() - start
    await pool.close()
    return sent / send_seconds, per_second


async def probe(port: int, sentences: list[str], seconds: float) -> list[int]:
    """Sentences answered in each second of a closed loop at concurrency 16, one sentence each."""
    done: list[float] = []
    pool = Pool(port, 16)
    start = time.perf_counter()

    async def worker(offset: int) -> None:
        i = offset
        while time.perf_counter() - start < seconds:
            phase = Phase()
            await _send(pool, [sentences[i % len(sentences)]], phase)
            if phase.sentences:
                done.append(time.perf_counter() - start)
            i += 16

    await asyncio.gather(*(worker(k) for k in range(16)))
    await pool.close()
    return [sum(1 for t in done if second <= t < second + 1) for second in range(int(seconds))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def batch_totals(port: int) -> tuple[float, float, float]:
    """The server's merged batches so far: count, sentences, requests (from /metrics)."""
    import urllib.request

    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    values = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return (
        float(values["sbert_batch_sentences_count"]),
        float(values["sbert_batch_sentences_sum"]),
        float(values["sbert_batch_requests_sum"]),
    )


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(args: argparse.Namespace, port: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "sbert", "serve", "--host", HOST, "--port", str(port)]
    command += ["--precision", args.precision, "--backend", args.backend]
    command += ["--model", args.model] if args.model else []
    command += shlex.split(args.server_args)
    return wait_ready(subprocess.Popen(command, stderr=subprocess.PIPE, text=True), port)


def wait_ready(process: subprocess.Popen, port: int) -> subprocess.Popen:
    """The server process once its /health answers (at most 300 s); its error if it exits first."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}: {process.stderr.read()}")
        try:
            if httpx.get(f"http://{HOST}:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not start in 300 s")


def percentiles(latencies: list[float]) -> str:
    if not latencies:
        return "- | - | -"
    p50, p95, p99 = np.percentile(np.array(latencies) * 1000, [50, 95, 99])
    return f"{p50:.1f} | {p95:.1f} | {p99:.1f}"


def flood_phase(
    args: argparse.Namespace, port: int, pid: int, sentences: list[str], results: dict, rss: list[float]
) -> dict:
    """The open loop at twice the best closed-loop rate of one sentence per request (base64)."""
    capacity = max(v["sentences_per_s"] for k, v in results.items() if k.startswith("size=1 "))
    flood = Phase()
    rss_before = rss_mib(pid)
    flood_rss: list[float] = []
    sent_rate, per_second = uvloop.run(
        open_loop(port, sentences, 2 * capacity, args.flood_seconds, flood, pid, flood_rss)
    )
    rss += flood_rss
    rss_flood = max(flood_rss)
    normal = next(
        (v["sentences_per_s"] for k, v in results.items() if k.startswith("size=1 concurrency=16 ")), capacity
    )
    recovered = next((s + 1 for s, n in enumerate(per_second) if n >= 0.8 * normal), None)
    rss.append(rss_mib(pid))
    summary = (
        f"open loop: {2 * capacity:.0f} requests/s asked (2× {capacity:.0f}), {sent_rate:.0f}/s sent for "
        f"{args.flood_seconds:.0f} s: statuses {dict(flood.statuses)}, p50/p95/p99 of 200s {percentiles(flood.latencies)} ms; "
        f"server RSS {rss_before:.0f} MiB before, {rss_flood:.0f} MiB at most during it, at most {max(rss):.0f} MiB sampled; "
        f"after the flood, sentences answered per second at concurrency 16: {per_second} "
        f"(normal {normal:.0f}): back to ≥ 80% in {recovered} s"
    )
    return {
        "asked_rate": 2 * capacity,
        "sent_rate": sent_rate,
        "statuses": dict(flood.statuses),
        "rss_mib_before_after_max": [rss_before, rss_flood, max(rss)],
        "recovery_per_second": per_second,
        "recovered_within_s": recovered,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--model", default=None, help="model (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", default="1,4,16,64")
    parser.add_argument("--sizes", default="1,32", help="sentences per request, one phase each")
    parser.add_argument("--formats", default="base64,float", help="encoding_format of each closed loop")
    parser.add_argument("--no-flood", dest="flood", action="store_false", help="skip the open loop")
    parser.add_argument(
        "--server-args",
        default="",
        help='more `sbert serve` options, given with "=": --server-args="--no-pack"',
    )
    parser.add_argument("--sentences", type=int, default=1024, help="STSb test sentences per phase")
    parser.add_argument("--flood-seconds", type=float, default=10.0)
    parser.add_argument("--output", default="benchmarks/serve_load.json", help="JSON file for the figures")
    parser.add_argument(
        "--standin", action="store_true", help="serve the 1-layer stand-in model (benchmarks/standin.py)"
    )
    run_on_model(parser.parse_args(), run)


def run_on_model(args: argparse.Namespace, run: Callable[[argparse.Namespace], None]) -> None:
    """``run(args)``, ``args.model`` the 1-layer stand-in (in a temporary folder) where ``args.standin``."""
    with tempfile.TemporaryDirectory() as work:
        if args.standin:
            args.model = str(bundled_standin(Path(work) / "standin"))
        run(args)


def run(args: argparse.Namespace) -> None:
    """The closed loops (and the open one) against ``args.model`` served and loaded here."""

    pairs = read_stsb("test", args.data_dir)
    sentences = [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]
    model = SentenceEncoder.from_pretrained(
        args.model, device="cpu", precision=args.precision, backend=args.backend
    )
    model.encode(sentences[:256], show_progress_bar=False)  # compile, calibrate
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port = sock.getsockname()[1]
    server = start_server(args, port)
    rss: list[float] = [rss_mib(server.pid)]
    print(
        f"{model.name}: {model.precision} ({model.backend}); server pid {server.pid}, {rss[0]:.0f} MiB",
        flush=True,
    )
    try:
        uvloop.run(
            closed_loop(port, [sentences[i : i + 32] for i in range(0, len(sentences), 32)], 4, Phase())
        )
        rows, results = [], {}
        formats = args.formats.split(",")
        for size in [int(n) for n in args.sizes.split(",")]:
            for concurrency in [int(c) for c in args.concurrency.split(",")]:
                # One sentence at a time is slow: that phase gets fewer sentences.
                count = min(len(sentences), args.sentences if size > 1 or concurrency > 1 else 400)
                texts = sentences[:count]
                requests = [texts[i : i + size] for i in range(0, count, size)]
                phases = {name: Phase() for name in formats}
                timings: dict[str, list[float]] = {name: [] for name in ["direct", *formats]}
                cpu = {name: 0.0 for name in ["direct", *formats]}
                client = {name: 0.0 for name in formats}  # the load generator's share
                batches = {name: [0.0, 0.0, 0.0] for name in formats}
                for repeat in range(args.repeats):
                    for side in alternating_order(["direct", *formats], repeat):
                        before = batch_totals(port) if side != "direct" else (0.0, 0.0, 0.0)
                        start, own, served = time.perf_counter(), time.process_time(), cpu_seconds(server.pid)
                        if side == "direct":
                            model.encode(texts, batch_size=32, show_progress_bar=False)
                        else:
                            uvloop.run(closed_loop(port, requests, concurrency, phases[side], side))
                            client[side] += time.process_time() - own
                        timings[side].append(time.perf_counter() - start)
                        cpu[side] += time.process_time() - own + cpu_seconds(server.pid) - served
                        if side != "direct":
                            after = batch_totals(port)
                            batches[side] = [t + a - b for t, a, b in zip(batches[side], after, before)]
                    rss.append(rss_mib(server.pid))
                for name in formats:
                    phase = phases[name]
                    ratio = statistics.median(d / t for d, t in zip(timings["direct"], timings[name]))
                    counts = batches[name]
                    per_batch = f"{counts[2] / counts[0]:.1f} requests, {counts[1] / counts[0]:.1f} sentences"
                    cpu_ratio, client_ratio = cpu[name] / cpu["direct"], client[name] / cpu["direct"]
                    key = f"size={size} concurrency={concurrency} format={name}"
                    results[key] = {
                        "sentences_per_s": phase.rate,
                        "ratio_to_encode": ratio,
                        "latency_ms_p50_p95_p99": [
                            float(x) for x in np.percentile(np.array(phase.latencies) * 1000, [50, 95, 99])
                        ],
                        "statuses": dict(phase.statuses),
                        "cpu_server_and_client_over_direct": cpu_ratio,
                        "cpu_client_over_direct": client_ratio,
                        "merged_batch_requests_sentences": [counts[2] / counts[0], counts[1] / counts[0]],
                    }
                    if name != formats[0]:  # this format's speed over the first's, round by round
                        results[key][f"ratio_to_{formats[0]}"] = statistics.median(
                            first / t for first, t in zip(timings[formats[0]], timings[name])
                        )
                    row = (
                        f"| {size} | {concurrency} | {name} | {phase.rate:.0f} | {ratio:.2f}× "
                        f"| {results[key].get(f'ratio_to_{formats[0]}', 1.0):.2f}× | {percentiles(phase.latencies)} "
                        f"| {dict(phase.statuses)} | {per_batch} | {cpu_ratio:.2f}× ({client_ratio:.2f}×) |"
                    )
                    rows.append(row)
                    print(row, flush=True)
        open_loop_result: dict | None = None
        if args.flood:
            open_loop_result = flood_phase(args, port, server.pid, sentences, results, rss)
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(60)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"\n{stamp}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"{model.name} {model.precision} ({model.backend}); median of {args.repeats} alternating repeats\n"
    )
    print(
        "| sentences/request | concurrency | format | server sentences/s | ratio to direct encode "
        f"| ratio to {formats[0]} | p50 ms | p95 ms | p99 ms | statuses | merged batch (mean) "
        "| CPU time, server + client / direct (client alone) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if open_loop_result is not None:
        print(f"\n{open_loop_result.pop('summary')}; server exit status on SIGTERM {code}")
    Path(args.output).write_text(
        json.dumps(
            {
                "date": stamp,
                "model": model.name,
                "precision": model.precision,
                "backend": model.backend,
                "closed_loop": results,
                "open_loop": open_loop_result,
                "server_exit_status": code,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
