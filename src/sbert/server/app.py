"""The HTTP endpoints: a thin shell over :class:`~sbert.server.batcher.Batcher`, the index and the cross-encoder.

Every handler reads its body under a byte limit, parses it strictly (``schemas.parse_body``), hands the
model work to the batcher's worker thread and awaits it, so the event loop only moves bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sbert.server import tei
from sbert.server.batcher import Embedded
from sbert.server.gate import Gate
from sbert.server.metrics import Metrics
from sbert.server.openapi import DOCS_PAGE, build_spec, speaks_tei, swagger_ui_dir
from sbert.server.responses import JSONResponse, embedding_values
from sbert.server.schemas import (
    APIError,
    EmbeddingRequest,
    RerankRequest,
    SearchRequest,
    SimilarityRequest,
    TEIRerankRequest,
    TEISimilarityRequest,
    parse_body,
    rerank_shape,
    similarity_shape,
)
from sbert.server.scoring import cosine_scores, cross_encoder_scores, ranked
from sbert.server.service import ModelFailed, Service, Services, await_worker, read_body
from sbert.truncation import truncate_embeddings


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
    if isinstance(services, Service):
        services = Services([services])
    served = services
    service = services.default  # the index, the cross-encoder and TEI's routes are the first model's
    metrics = Metrics(queue_depth=lambda: served.queued_items, in_flight=lambda: gate.in_flight)
    for each in services.all:
        each.batcher.on_batch = metrics.batch
        # Each batcher waits under load for as many requests as the server holds, whatever their
        # model: with several models busy at once a batch may wait its batch_wait_ms for nothing.
        each.batcher.in_flight = lambda: gate.in_flight
        each.max_concurrent = max_concurrent
    limits = service.limits

    async def api_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, APIError)
        status, body = error.answer(tei=speaks_tei(request.scope))  # TEI's shape on TEI's routes
        return Response(body, status, error.headers, media_type="application/json")

    async def http_error(_: Request, error: Exception) -> Response:  # unknown path, wrong method
        assert isinstance(error, HTTPException)
        return await api_error(_, APIError(error.status_code, str(error.detail)))

    async def client_gone(_: Request, error: Exception) -> Response:
        # The client left mid-body: nobody reads this answer, and it is no server error to log.
        # 499 is nginx's "client closed request", so /metrics counts these apart.
        return Response(status_code=499)

    async def server_error(request: Request, error: Exception) -> Response:  # still JSON, logged
        if isinstance(error, ModelFailed):  # the model failed: TEI calls that a backend error
            return await api_error(request, APIError(500, f"internal error: {error}", tei=(424, "Backend")))
        return await api_error(request, APIError(500, f"internal error: {type(error).__name__}: {error}"))

    async def embeddings(request: Request) -> Response:
        body = parse_body(await read_body(request, limits), EmbeddingRequest, limits.max_items)
        chosen = served.pick(body.model)
        if body.dimensions is not None and body.dimensions > chosen.model.dim:
            raise APIError(
                422,
                f"dimensions: {body.dimensions} is more than the model's {chosen.model.dim}",
                "dimensions",
            )
        name = "input[{}]".format
        result = await chosen.embed(body.input, body.truncate, name, chosen.prompt(body.prompt_name))
        vectors = result.vectors
        if body.dimensions is not None:  # OpenAI's shortening: keep the first d, unit length again
            vectors = truncate_embeddings(vectors, body.dimensions)
        values = embedding_values(vectors, body.encoding_format)
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(values)]
        return _json(
            {
                "object": "list",
                "data": data,
                "model": chosen.model_id,
                **_usage(result),
                **_truncated(result, name),
            }
        )

    async def similarity(request: Request) -> Response:
        body = parse_body(
            await read_body(request, limits), tei.marking(request, similarity_shape), limits.max_items
        )
        if isinstance(body, TEISimilarityRequest):
            return await tei.similarity(service, body)
        assert isinstance(body, SimilarityRequest)
        chosen = served.pick(body.model)
        texts = [body.source_sentence, *body.sentences]
        name = _names("source_sentence", "sentences")
        result = await chosen.embed(texts, body.truncate, name, chosen.prompt(body.prompt_name))
        scores = cosine_scores(result.vectors[0], result.vectors[1:])
        return _json(
            {"scores": scores, "model": chosen.model_id, **_usage(result), **_truncated(result, name)}
        )

    async def search(request: Request) -> Response:
        body = parse_body(await read_body(request, limits), SearchRequest, limits.max_items)
        chosen = served.pick(body.model)
        index = chosen.index
        if index is None:
            raise APIError(404, "no index is loaded: start the server with --index DIR")
        name = _names("query", "")
        result = await chosen.embed(
            [body.query], body.truncate, name, chosen.prompt(body.prompt_name, query=True)
        )
        hits = await await_worker(
            chosen.batcher,
            lambda: chosen.batcher.call(
                lambda: index.search(index.query_vectors(result.vectors), body.top_k)[0]
            ),
        )
        results = [
            {"corpus_id": h.corpus_id, "score": np.float32(h.score), "text": index.text(h.corpus_id)}
            for h in hits
        ]
        return _json(
            {"results": results, "model": chosen.model_id, **_usage(result), **_truncated(result, name)}
        )

    async def rerank(request: Request) -> Response:
        body = parse_body(
            await read_body(request, limits), tei.marking(request, rerank_shape), limits.max_items
        )
        if isinstance(body, TEIRerankRequest):
            return await tei.rerank(service, body)
        assert isinstance(body, RerankRequest)
        cross_encoder = service.cross_encoder
        if cross_encoder is not None:
            if (
                body.model is not None
                and body.model != cross_encoder.name
                and body.model not in served.by_name
            ):
                listed = ", ".join(repr(each.model_id) for each in served.all)
                raise APIError(
                    404,
                    f"model: {body.model!r} is not served here; this server runs "
                    f"{cross_encoder.name!r} (cross-encoder) and {listed}",
                    "model",
                )
            scores = await await_worker(
                service.batcher,
                lambda: service.batcher.call(
                    lambda: cross_encoder_scores(cross_encoder, body.query, body.documents, body.truncate),
                    items=len(body.documents),
                ),
                lambda i: f"documents[{i}]",
            )
            scorer, name, extra = "cross-encoder", cross_encoder.name, {}
        else:
            chosen = served.pick(body.model)
            texts = [body.query, *body.documents]
            names = _names("query", "documents")
            result = await chosen.embed(texts, body.truncate, names)
            scores = cosine_scores(result.vectors[0], result.vectors[1:])
            scorer, name, extra = (
                "bi-encoder",
                chosen.model_id,
                {**_usage(result), **_truncated(result, names)},
            )
        results = [
            {
                "index": i,
                "relevance_score": score,
                **({"document": {"text": body.documents[i]}} if body.return_documents else {}),
            }
            for i, score in ranked(scores, body.top_n)
        ]
        return _json({"results": results, "model": name, "scorer": scorer, **extra})

    async def health(_: Request) -> Response:
        model = service.model
        plan = model.plan
        return _json(
            {
                "status": "ok",
                "model": service.model_id,
                "dimension": model.dim,
                "max_input_tokens": model.max_seq_length,
                "precision": plan.precision,
                "backend": plan.backend,
                "engine": plan.to_dict(),
                "packed_batches": service.batcher.settings.pack and plan.packs,
                "index": service.index_path,
                "cross_encoder": service.cross_encoder.name if service.cross_encoder else None,
                "queued_items": served.queued_items,
                "models": [each.model_id for each in served.all],
            }
        )

    async def models(_: Request) -> Response:
        names = [each.model_id for each in served.all]
        names += [service.cross_encoder.name] if service.cross_encoder else []
        data = [{"id": n, "object": "model", "created": service.created, "owned_by": "sbert"} for n in names]
        return _json({"object": "list", "data": data})

    async def prometheus(_: Request) -> Response:
        return Response(metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    spec = JSONResponse(build_spec(limits, api_key is not None, service.model_id)).body
    docs_files = swagger_ui_dir()

    async def openapi(_: Request) -> Response:
        return Response(spec, media_type="application/json")

    async def docs(_: Request) -> Response:
        if docs_files is None:
            raise APIError(404, "/docs needs Swagger UI's files: pip install swagger-ui-py (the serve extra)")
        return HTMLResponse(DOCS_PAGE.format(title=service.model_id))

    app = Starlette(
        routes=[
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/similarity", similarity, methods=["POST"]),
            Route("/search", search, methods=["POST"]),
            Route("/rerank", rerank, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/metrics", prometheus, methods=["GET"]),
            *tei.tei_routes(service),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/docs", docs, methods=["GET"]),
            *([Mount("/docs/static", StaticFiles(directory=docs_files))] if docs_files else []),
        ],
        exception_handlers={
            APIError: api_error,
            HTTPException: http_error,
            ClientDisconnect: client_gone,
            Exception: server_error,
        },
    )
    gate = Gate(app, metrics, api_key, max_concurrent, retry_after=service.batcher.retry_after)
    return gate


def _usage(result: Embedded) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": result.prompt_tokens, "total_tokens": result.prompt_tokens}}


def _truncated(result: Embedded, name: Callable[[int], str]) -> dict[str, Any]:
    """Inputs cut to the model's limit: ``[{"param": "input[3]", "tokens": 700}]`` (empty when none was)."""
    return {"truncated": [{"param": name(i), "tokens": n} for i, n in result.truncated]}


def _names(first: str, rest: str) -> Callable[[int], str]:
    """Field names of a request embedded as one list: ``first``, then ``rest[0]``, ``rest[1]``, ..."""
    return lambda i: f"{rest}[{i - 1}]" if i else first


def _json(payload: dict[str, Any]) -> Response:
    return JSONResponse(payload)  # numpy arrays and scalars written by orjson, no float loop
