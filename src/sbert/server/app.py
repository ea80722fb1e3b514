"""The ASGI app: :data:`~sbert.server.routes.OPERATIONS` routed by Starlette behind a
:class:`~sbert.server.gate.Gate`, and the exception handlers that turn every failure into JSON.

The handlers are module-level functions (:mod:`sbert.server.handlers`, :mod:`sbert.server.tei`) that
find the served models in the app's state; this module only wires them.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from sbert.server import abilities, handlers
from sbert.server.errors import APIError
from sbert.server.gate import Gate
from sbert.server.metrics import Metrics
from sbert.server.openapi import build_spec, swagger_ui_dir
from sbert.server.responses import JSONResponse
from sbert.server.routes import OPERATIONS, Handler, speaks_tei
from sbert.server.service import ModelFailed, Service, Services


def create_app(services: Service | Services, api_key: str | None = None, max_concurrent: int = 512) -> Gate:
    """The ASGI app: Starlette routes behind a :class:`~sbert.server.gate.Gate`.

    Starlette rather than FastAPI: the bodies are parsed by ``schemas.parse_body`` anyway, and
    FastAPI's per-request machinery cost about 0.2 ms of CPU, a tenth of a 2-core machine at 1000
    requests/s. With several models, a request picks one by ``model`` (none: the first).

    Not run by the tests: ``service`` is a loaded model service and ``uvicorn.run`` serves until
    stopped (tests/server runs a real server process).

    Examples:
        >>> app = create_app(service, api_key="secret")  # doctest: +SKIP
        >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    served = services if isinstance(services, Services) else Services([services])
    default = served.default
    metrics = Metrics(queue_depth=lambda: served.queued_items, in_flight=lambda: gate.in_flight)
    for each in served.all:
        each.batcher.on_batch = metrics.batch
        # Each batcher waits under load for as many requests as the server holds, whatever their
        # model: with several models busy at once a batch may wait its batch_wait_ms for nothing.
        each.batcher.in_flight = lambda: gate.in_flight
        each.max_concurrent = max_concurrent
    docs_files = swagger_ui_dir()
    app = Starlette(
        routes=routes(docs_files),
        exception_handlers={
            APIError: api_error,
            HTTPException: http_error,
            ClientDisconnect: client_gone,
            Exception: server_error,
        },
    )
    app.state.services, app.state.metrics, app.state.docs_files = served, metrics, docs_files
    prompts = sorted({name for each in served.all for name in each.model.prompts.named})
    # /embed's and /v1/embeddings' `dimensions`: a dense model's width (a sparse model refuses them)
    dimension = max((each.model.dim for each in served.all if each.kind == "dense"), default=None)
    cross_encoder = default.cross_encoder is not None  # /rerank's cross-encoder is the first model's
    spec = build_spec(
        default.limits,
        api_key is not None,
        default.model_id,
        prompts,
        dimension,
        cross_encoder,
        abilities.vocabulary_size(default.model),  # /decode's and /v1/embeddings' token ids
    )
    app.state.spec = JSONResponse(spec).body
    gate = Gate(app, metrics, api_key, max_concurrent, retry_after=default.batcher.retry_after)
    return gate


def routes(docs_files: Path | None) -> list[BaseRoute]:
    """One Starlette route per path of :data:`OPERATIONS` (a wrong method gets 405 with every method
    of the path in ``Allow``), then the document, Swagger UI and its files."""
    by_path: dict[str, dict[str, Handler]] = defaultdict(dict)
    for op in OPERATIONS:
        by_path[op.route_path][op.method.upper()] = op.handler
    table: list[BaseRoute] = [
        Route(path, _dispatch(methods), methods=list(methods)) for path, methods in by_path.items()
    ]
    table += [
        Route("/openapi.json", handlers.openapi_document, methods=["GET"]),
        Route("/docs", handlers.docs, methods=["GET"]),
    ]
    if docs_files is not None:
        table.append(Mount("/docs/static", StaticFiles(directory=docs_files)))
    return table


def _dispatch(methods: dict[str, Handler]) -> Handler:
    """The handler of a request's method (HEAD: GET's, as Starlette routes it)."""

    async def handle(request: Request) -> Response:
        return await methods[request.method if request.method in methods else "GET"](request)

    return handle


async def api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, APIError)
    status, body = error.answer(tei=speaks_tei(request.scope))  # TEI's shape on TEI's routes
    return Response(body, status, error.headers, media_type="application/json")


async def http_error(request: Request, error: Exception) -> Response:  # unknown path, wrong method
    assert isinstance(error, HTTPException)
    headers = dict(error.headers or {})  # a 405's Allow
    return await api_error(request, APIError(error.status_code, str(error.detail), headers=headers))


async def client_gone(_: Request, error: Exception) -> Response:
    # The client left mid-body: nobody reads this answer, and it is no server error to log.
    # 499 is nginx's "client closed request", so /metrics counts these apart.
    return Response(status_code=499)


async def server_error(request: Request, error: Exception) -> Response:  # still JSON, logged
    if isinstance(error, ModelFailed):  # the model failed: TEI calls that a backend error
        return await api_error(request, APIError(500, f"internal error: {error}", tei=(424, "Backend")))
    return await api_error(request, APIError(500, f"internal error: {type(error).__name__}: {error}"))
