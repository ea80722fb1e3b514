"""Bodies built to break a parser, clients that leave mid-request, and a handler that fails: every
answer is a 4xx naming the problem or a counted 5xx, and the server's log stays free of tracebacks
for what a client did."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_process import ServerProcess, tiny_server_args

from sbert.server.gate import Gate
from sbert.server.metrics import Metrics


def raw_post(server: ServerProcess, body: bytes) -> httpx.Response:
    headers = {"content-type": "application/json"}
    return httpx.post(f"{server.url}/v1/embeddings", content=body, headers=headers, timeout=30)


def count(server: ServerProcess, status: int) -> float:
    metrics = httpx.get(f"{server.url}/metrics").text
    found = re.search(
        rf'sbert_requests_total{{endpoint="/v1/embeddings",status="{status}"}} ([0-9.]+)', metrics
    )
    return float(found.group(1)) if found else 0.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "body: JSON nested too deeply"),
        (b'{"input": "a", "dimensions": ' + b"9" * 5000 + b"}", "body: a number of more than"),
    ],
    ids=["nested-100000-deep", "integer-of-5000-digits"],
)
def test_a_hostile_body_is_a_400_naming_it(server: ServerProcess, body: bytes, message: str) -> None:
    response = raw_post(server, body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith(message)
    assert count(server, 500) == 0
    assert raw_post(server, b'{"input": "still fine"}').status_code == 200


def test_a_client_that_leaves_mid_body_leaves_no_traceback(tiny_model_dir: Path) -> None:
    process = ServerProcess(tiny_server_args(tiny_model_dir)).wait_ready()
    try:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", process.port), timeout=10) as sock:
                head = "POST /v1/embeddings HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                sock.sendall(f"{head}content-length: 1000\r\n\r\n".encode() + b'{"input": "half')
        assert (
            httpx.post(f"{process.url}/v1/embeddings", json={"input": "after"}, timeout=30).status_code == 200
        )
    finally:
        process.terminate()
        process.wait_exit()
    log = process.output()
    assert "Traceback" not in log and "ERROR" not in log, log


def test_a_failing_handler_is_a_counted_500() -> None:
    metrics = Metrics(queue_depth=lambda: 0)

    async def failing_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        # as Starlette's ServerErrorMiddleware does: answer 500, then re-raise for the server's log
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
        raise RuntimeError("a bug")

    gate = Gate(failing_app, metrics, api_key=None, max_concurrent=4)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "path": "/v1/embeddings", "headers": []}
    with pytest.raises(RuntimeError, match="a bug"):
        asyncio.run(gate(scope, receive, send))
    assert sent[0]["status"] == 500 and gate.in_flight == 0
    assert b'sbert_requests_total{endpoint="/v1/embeddings",status="500"} 1.0' in metrics.exposition()
