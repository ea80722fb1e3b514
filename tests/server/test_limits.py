"""Backpressure, the API key and the SIGTERM drain, on a server with small limits and a key."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openai import AuthenticationError, OpenAI
from server_process import ServerProcess, tiny_server_args

KEY = "s3cret-key"
AUTH = {"authorization": f"Bearer {KEY}"}
# About 60 tokens each: with --max-batch-tokens 64 every sentence is a forward pass of its own.
SLOW_TEXT = " ".join(["a man plays the guitar in the park"] * 7)


@pytest.fixture(scope="module")
def limited(tiny_model_dir: Path) -> Iterator[ServerProcess]:
    args = tiny_server_args(
        tiny_model_dir,
        "--max-concurrent-requests",
        "4",
        "--max-queued-items",
        "64",
        "--max-batch-tokens",
        "64",
        "--max-items",
        "512",
    )
    args += ["--served-model-name", "tiny"]
    process = ServerProcess(args, env={"SBERT_API_KEY": KEY}).wait_ready()  # the key from the environment
    yield process
    process.kill()


def test_api_key_required_except_health(limited: ServerProcess) -> None:
    url = f"{limited.url}/v1/embeddings"
    assert httpx.post(url, json={"input": "a"}).status_code == 401
    wrong = httpx.post(url, json={"input": "a"}, headers={"authorization": "Bearer s3cret-kez"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert "API key" in wrong.json()["error"]["message"]
    assert httpx.post(url, json={"input": "a"}, headers=AUTH).status_code == 200
    assert httpx.get(f"{limited.url}/health").status_code == 200
    assert httpx.get(f"{limited.url}/metrics").status_code == 401
    assert (
        len(OpenAI(base_url=f"{limited.url}/v1", api_key=KEY).embeddings.create(input="a", model="tiny").data)
        == 1
    )
    with pytest.raises(AuthenticationError):
        OpenAI(base_url=f"{limited.url}/v1", api_key="nope", max_retries=0).embeddings.create(
            input="a", model="m"
        )
    tei = httpx.post(f"{limited.url}/embed", json={"inputs": "a"})  # TEI's route: TEI's error body
    assert tei.status_code == 401 and tei.json()["error_type"] == "Validation"
    assert "API key" in tei.json()["error"]


def test_docs_and_schema_need_no_key_and_the_schema_says_which_routes_do(limited: ServerProcess) -> None:
    # A browser opening /docs cannot send the key; the document and Swagger UI's files hide nothing.
    for path in ("/openapi.json", "/docs", "/docs/static/swagger-ui.css"):
        assert httpx.get(f"{limited.url}{path}").status_code == 200, path
    spec = httpx.get(f"{limited.url}/openapi.json").json()
    assert spec["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert spec["paths"]["/v1/embeddings"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in spec["paths"]["/health"]["get"]
    assert spec["components"]["schemas"]["EmbeddingRequest"]["properties"]["input"]["maxItems"] == 512


async def _flood(url: str, requests: int, path: str = "/v1/embeddings") -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=requests)
    async with httpx.AsyncClient(headers=AUTH, timeout=60, limits=limits) as client:
        body = {"input": [SLOW_TEXT] * 8} if path == "/v1/embeddings" else {"inputs": [SLOW_TEXT] * 8}
        return await asyncio.gather(*(client.post(f"{url}{path}", json=body) for _ in range(requests)))


def test_flood_gets_429_with_retry_after_then_recovers(limited: ServerProcess) -> None:
    responses = asyncio.run(_flood(limited.url, 48))
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {200, 429}, statuses
    assert statuses.count(429) > 0 and statuses.count(200) >= 4
    refused = [r for r in responses if r.status_code == 429]
    assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
    assert all(r.json()["error"]["type"] == "rate_limit_error" for r in refused)
    ok = next(r for r in responses if r.status_code == 200)
    assert len(ok.json()["data"]) == 8
    after = httpx.post(f"{limited.url}/v1/embeddings", json={"input": "a"}, headers=AUTH)
    assert after.status_code == 200
    metrics = httpx.get(f"{limited.url}/metrics", headers=AUTH).text
    assert 'sbert_requests_total{endpoint="/v1/embeddings",status="429"}' in metrics


def test_flood_on_a_tei_route_gets_tei_overloaded(limited: ServerProcess) -> None:
    responses = asyncio.run(_flood(limited.url, 48, "/embed"))
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {200, 429} and statuses.count(429) > 0, statuses
    refused = [r for r in responses if r.status_code == 429]
    assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
    assert all(
        r.json()["error_type"] == "Overloaded" and set(r.json()) == {"error", "error_type"} for r in refused
    )
    assert len(next(r for r in responses if r.status_code == 200).json()) == 8


def test_sigterm_drains_then_exits_zero(limited: ServerProcess) -> None:
    url = f"{limited.url}/v1/embeddings"
    slow: dict[str, httpx.Response] = {}
    # 300 sentences of about 60 tokens, one forward pass each: long enough to be in flight at SIGTERM.
    thread = threading.Thread(
        target=lambda: slow.update(
            response=httpx.post(url, json={"input": [SLOW_TEXT] * 300}, headers=AUTH, timeout=60)
        )
    )
    thread.start()
    deadline = time.monotonic() + 10
    while in_flight(limited) < 2:  # the slow request and this /metrics request
        assert time.monotonic() < deadline, "the slow request never started"
    limited.terminate()
    refused = None
    while refused is None and time.monotonic() < deadline:
        response = httpx.post(url, json={"input": "a"}, headers=AUTH)
        refused = response if response.status_code == 503 else None
    assert refused is not None, "no request was refused while draining"
    assert "shutting down" in refused.json()["error"]["message"]
    tei = httpx.post(f"{limited.url}/embed", json={"inputs": "a"}, headers=AUTH)  # still draining
    assert tei.status_code == 503 and tei.json() == {
        "error": "the server is shutting down",
        "error_type": "Unhealthy",
    }
    thread.join(60)
    assert slow["response"].status_code == 200 and len(slow["response"].json()["data"]) == 300
    assert limited.wait_exit(30) == 0


def in_flight(server: ServerProcess) -> float:
    metrics = httpx.get(f"{server.url}/metrics", headers=AUTH).text
    return float(
        next(line for line in metrics.splitlines() if line.startswith("sbert_requests_in_flight ")).split()[1]
    )
