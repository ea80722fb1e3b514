"""The door every request passes: draining, API key, concurrency limit, and the request metrics.

A plain ASGI middleware (Starlette's ``BaseHTTPMiddleware`` costs a task per request). Refusals are
decided before the body is read, so a flood costs little: 503 while draining, 401 without the key,
429 with ``Retry-After`` past ``max_concurrent`` requests in flight. On TEI's own routes a refusal
has TEI's shape (``Overloaded``, ``Unhealthy``); /rerank and /similarity take sbert's, as their body,
which would tell TEI's apart, is not read yet.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from typing import Any

from sbert.server.errors import APIError
from sbert.server.metrics import Metrics
from sbert.server.routes import OPERATIONS, TEI_PATHS, is_open

ENDPOINTS = frozenset(op.path for op in OPERATIONS) | {"/openapi.json", "/docs"}
# Routes with a path parameter, by the path before it: /metrics counts /v1/models/x as /v1/models/{model}.
TEMPLATES = {op.path.split("{")[0]: op.path for op in OPERATIONS if op.path_params}
DOCS_FILES = "/docs/static/"  # Swagger UI's files: a browser loads them without the key

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class Gate:
    """Wraps the app; ``draining`` and ``in_flight`` are read by the process that runs it.

    Args:
        app: The ASGI app behind the gate.
        metrics: Where request counts and latencies go.
        api_key: Bearer token every request but the health routes, the document and /docs must
            carry (``routes.is_open``); ``None``: no key.
        max_concurrent: Requests served at once; more get 429.
        retry_after: Seconds to tell a refused client to wait.
    """

    def __init__(
        self,
        app: Any,
        metrics: Metrics,
        api_key: str | None,
        max_concurrent: int,
        retry_after: Callable[[], int] = lambda: 1,
    ) -> None:
        self.app, self.metrics, self.max_concurrent, self.retry_after = (
            app,
            metrics,
            max_concurrent,
            retry_after,
        )
        self._expected = f"Bearer {api_key}".encode() if api_key else None
        self.draining = False
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        path = scope["path"]
        status = 500

        async def record_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        refusal = self._refusal(scope)
        try:
            if refusal is not None:
                await respond(refusal, record_status, tei=path in TEI_PATHS)
            else:
                self.in_flight += 1
                try:
                    await self.app(scope, receive, record_status)
                finally:
                    self.in_flight -= 1
        finally:  # a 500 re-raises after its answer went out (for the server's log): count it too
            self.metrics.request(endpoint(path), status, time.perf_counter() - start)

    def _refusal(self, scope: Scope) -> APIError | None:
        if self.draining:
            return APIError(503, "the server is shutting down", headers={"connection": "close"})
        path = scope["path"]
        if (
            self._expected is not None
            and not is_open(scope["method"], path)
            and not path.startswith(DOCS_FILES)
        ):
            given = next((value for key, value in scope["headers"] if key == b"authorization"), b"")
            if not hmac.compare_digest(given, self._expected):  # constant time: no timing oracle
                return APIError(
                    401,
                    "missing or wrong API key: send 'Authorization: Bearer <key>'",
                    headers={"www-authenticate": "Bearer"},
                )
        if self.in_flight >= self.max_concurrent:
            return APIError(
                429,
                f"too many requests in flight (limit {self.max_concurrent})",
                headers={"retry-after": str(self.retry_after())},
            )
        return None


def endpoint(path: str) -> str:
    """The route a request path is counted under in /metrics (``other``: none of the table's).

    Examples:
        >>> endpoint("/embed"), endpoint("/v1/models/org/name"), endpoint("/nothing")
        ('/embed', '/v1/models/{model}', 'other')
    """
    if path in ENDPOINTS:
        return path
    return next((template for prefix, template in TEMPLATES.items() if path.startswith(prefix)), "other")


async def respond(error: APIError, send: Send, tei: bool = False) -> None:
    """Send ``error`` as a complete response, straight through ASGI (with ``tei``: in TEI's shape)."""
    status, body = error.answer(tei)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(key.encode(), value.encode()) for key, value in error.headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
