"""The handlers of OpenAI's and sbert's routes, one per route, over typed request bodies.

Every handler reads its body under a byte limit, parses it strictly (``schemas.parse_body``), hands the
model work to the batcher's worker thread and awaits it, so the event loop only moves bytes. The
served models come from the app's state (:func:`~sbert.server.service.services_of`); with several
models a request picks one by ``model`` (none: the first), and every answer names the one it used.
TEI's handlers are in :mod:`sbert.server.tei`; :mod:`sbert.server.routes` maps paths to both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from sbert.embeddings.truncation import truncate_embeddings
from sbert.server import abilities, pair_jobs, tei
from sbert.server.batcher import Embedded, InputTooLong
from sbert.server.errors import APIError
from sbert.server.openai_schemas import (
    EmbeddingIdsRequest,
    EmbeddingRequest,
    RerankRequest,
    SearchRequest,
    SimilarityRequest,
)
from sbert.server.responses import JSONResponse, embedding_values
from sbert.server.schemas import embedding_shape, parse_body, rerank_shape, similarity_shape
from sbert.server.scoring import cosine_scores, no_raw_scores, ranked
from sbert.server.service import Service, Services, await_worker, read_body, services_of
from sbert.server.sparse_served import refuse_sparse
from sbert.server.tei_schemas import TEIRerankRequest, TEISimilarityRequest


async def embeddings(request: Request) -> Response:
    """OpenAI's ``POST /v1/embeddings`` (and ``/embeddings``): texts, or token ids."""
    served = services_of(request)
    limits = served.default.limits
    body = parse_body(await read_body(request, limits), embedding_shape, limits.max_items)
    assert isinstance(body, EmbeddingRequest)
    chosen = served.pick(body.model)
    refuse_sparse(chosen.model, chosen.model_id)  # token ids too, which skip Service.embed
    if body.dimensions is not None and body.dimensions > chosen.model.dim:
        raise APIError(
            422, f"dimensions: {body.dimensions} is more than the model's {chosen.model.dim}", "dimensions"
        )
    name = "input[{}]".format
    prompt = chosen.prompt(body.prompt_name)
    if isinstance(body, EmbeddingIdsRequest):
        result = await _embed_ids(chosen, body, prompt)
    else:
        result = await chosen.embed(body.input, body.truncate, name, prompt)
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


async def _embed_ids(chosen: Service, body: EmbeddingIdsRequest, prompt: str) -> Embedded:
    """Token-id inputs: each row's ids with the model's special tokens, no prompt (a prompt is text)."""
    if prompt:
        raise APIError(
            422,
            f"input: token ids take no prompt, and this model puts {prompt!r} before every input "
            "(send text, or a model without a default prompt)",
            "input",
        )
    rows: list[list[int]] = body.input
    size = abilities.vocabulary_size(chosen.model)
    for i, row in enumerate(rows):
        for j, token in enumerate(row):
            if token >= size:
                param = f"input[{i}][{j}]"
                raise APIError(
                    422, f"{param}: {token} is not a token id of this model (vocabulary of {size})", param
                )
    return await await_worker(  # type: ignore[no-any-return]
        chosen.batcher,
        lambda: chosen.batcher.call(
            lambda: abilities.embed_ids(chosen.model, rows, body.truncate, chosen.batcher.settings),
            items=len(rows),
        ),
        "input[{}]".format,
    )


async def similarity(request: Request) -> Response:
    """``POST /similarity``: sbert's body, or TEI's (under ``inputs``, the default model)."""
    served = services_of(request)
    limits = served.default.limits
    body = parse_body(
        await read_body(request, limits), tei.marking(request, similarity_shape), limits.max_items
    )
    if isinstance(body, TEISimilarityRequest):
        return await tei.similarity(served.default, body)
    assert isinstance(body, SimilarityRequest)
    chosen = served.pick(body.model)
    texts = [body.source_sentence, *body.sentences]
    name = _names("source_sentence", "sentences")
    result = await chosen.embed(texts, body.truncate, name, chosen.prompt(body.prompt_name))
    scores = cosine_scores(result.vectors[0], result.vectors[1:])
    return _json({"scores": scores, "model": chosen.model_id, **_usage(result), **_truncated(result, name)})


async def search(request: Request) -> Response:
    """``POST /search``: the nearest texts of the index loaded with the model."""
    served = services_of(request)
    limits = served.default.limits
    body = parse_body(await read_body(request, limits), SearchRequest, limits.max_items)
    chosen = served.pick(body.model)
    index = chosen.index
    if index is None:
        raise APIError(404, _no_index(served, chosen), "model" if body.model else None)
    name = _names("query", "")
    if chosen.kind == "sparse":
        result, hits = await _sparse_search(chosen, body)
        return _json(_searched(chosen, hits, result, name))
    result = await chosen.embed(
        [body.query], body.truncate, name, chosen.prompt(body.prompt_name, query=True)
    )
    hits = await await_worker(
        chosen.batcher,
        lambda: chosen.batcher.call(lambda: index.search(index.query_vectors(result.vectors), body.top_k)[0]),
    )
    return _json(_searched(chosen, hits, result, name))


async def _sparse_search(chosen: Service, body: SearchRequest) -> tuple[Embedded, list[Any]]:
    """A sparse model's query (its query route and prompt) and the hits of its sparse index, in one
    job on the model's thread: no other request's texts share a query's forward pass here."""
    model, index = chosen.model, chosen.index
    prompt = chosen.prompt(body.prompt_name, query=True)

    def job() -> tuple[Embedded, list[Any]]:
        limit = model.max_seq_length
        counts = model.token_counts([body.query], prompt=prompt)
        if counts[0] > limit and not body.truncate:
            raise InputTooLong(0, counts[0], limit)
        vectors = model.encode_query([body.query], prompt)  # type: ignore[attr-defined]  # (1, vocabulary) CSR
        return Embedded(vectors, counts, limit), index.search(vectors, body.top_k)[0]

    return await await_worker(chosen.batcher, lambda: chosen.batcher.call(job), _names("query", ""))  # type: ignore[no-any-return]


def _searched(
    chosen: Service, hits: list[Any], result: Embedded, name: Callable[[int], str]
) -> dict[str, Any]:
    """/search's answer: each hit's corpus id, score and text, the model, usage and cuts."""
    index = chosen.index
    results = [
        {"corpus_id": h.corpus_id, "score": np.float32(h.score), "text": index.text(h.corpus_id)}
        for h in hits
    ]
    return {"results": results, "model": chosen.model_id, **_usage(result), **_truncated(result, name)}


def _no_index(served: Services, chosen: Service) -> str:
    """Why /search has nothing to search, naming the model that has an index if another has one."""
    holder = next((service for service in served.all if service.index is not None), None)
    if holder is None:
        return "no index is loaded: start the server with --index DIR"
    return (
        f"model: {chosen.model_id!r} has no index; the index {holder.index_path} is "
        f"{holder.model_id!r}'s: send model {holder.model_id!r}"
    )


async def rerank(request: Request) -> Response:
    """``POST /rerank``: Cohere's, Jina's and infinity's body (``documents``), or TEI's (``texts``)."""
    served = services_of(request)
    service = served.default  # the cross-encoder goes with the first model
    limits = service.limits
    body = parse_body(await read_body(request, limits), tei.marking(request, rerank_shape), limits.max_items)
    if isinstance(body, TEIRerankRequest):
        return await tei.rerank(service, body)
    assert isinstance(body, RerankRequest)
    cross_encoder = service.cross_encoder
    extra: dict[str, Any] = {}
    if cross_encoder is not None:
        if body.model not in (None, cross_encoder.name, *served.names):
            raise APIError(
                404,
                f"model: {body.model!r} is not served here; {served.listing()}, "
                f"and {cross_encoder.name!r} (cross-encoder)",
                "model",
            )
        scores = await await_worker(
            service.batcher,
            lambda: pair_jobs.rerank(
                service.batcher, cross_encoder, body.query, body.documents, body.truncate, body.raw_scores
            ),
            lambda i: f"documents[{i}]",
        )
        scorer, name = "cross-encoder", cross_encoder.name
    else:
        chosen = served.pick(body.model)
        if body.raw_scores:
            raise no_raw_scores(chosen.model_id)
        names = _names("query", "documents")
        result = await chosen.embed([body.query, *body.documents], body.truncate, names)
        scores = cosine_scores(result.vectors[0], result.vectors[1:])
        scorer, name, extra = "bi-encoder", chosen.model_id, {**_usage(result), **_truncated(result, names)}
    results = [
        {
            "index": i,
            "relevance_score": score,
            **({"document": {"text": body.documents[i]}} if body.return_documents else {}),
        }
        for i, score in ranked(scores, body.top_n)
    ]
    return _json({"results": results, "model": name, "scorer": scorer, **extra})


async def health(request: Request) -> Response:
    """``GET /health`` (and TEI's ``GET /``, ``/ping``): the default model and every served name."""
    served = services_of(request)
    service = served.default
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
            "serving": service.serving_plan().to_dict(),
            "index": service.index_path,
            "cross_encoder": service.cross_encoder.name if service.cross_encoder else None,
            "queued_items": served.queued_items,
            "models": served.names,
            "kind": service.kind,
        }
    )


def _cards(served: Services) -> list[dict[str, Any]]:
    """OpenAI's model object for every served name, and the cross-encoder's, each with its ``kind``
    (``dense``, ``sparse`` or ``cross-encoder``: which routes it answers)."""
    service = served.default
    kinds: list[tuple[str, str]] = [(name, each.kind) for each in served.all for name in each.names]
    if service.cross_encoder:
        kinds.append((service.cross_encoder.name, "cross-encoder"))
    return [
        {"id": name, "object": "model", "created": service.created, "owned_by": "sbert", "kind": kind}
        for name, kind in kinds
    ]


async def models(request: Request) -> Response:
    """OpenAI's ``GET /v1/models`` (and ``/models``)."""
    return _json({"object": "list", "data": _cards(services_of(request))})


async def model(request: Request) -> Response:
    """OpenAI's ``GET /v1/models/{id}`` (``models.retrieve``)."""
    served = services_of(request)
    wanted = request.path_params["model"]
    card = next((card for card in _cards(served) if card["id"] == wanted), None)
    if card is None:
        raise APIError(404, f"model: {wanted!r} is not served here; {served.listing()}", "model")
    return _json(card)


async def prometheus(request: Request) -> Response:
    return Response(
        request.app.state.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8"
    )


async def openapi_document(request: Request) -> Response:
    return Response(request.app.state.spec, media_type="application/json")


async def docs(request: Request) -> Response:
    if request.app.state.docs_files is None:
        raise APIError(404, "/docs needs Swagger UI's files: pip install swagger-ui-py (the serve extra)")
    return HTMLResponse(DOCS_PAGE.format(title=services_of(request).default.model_id))


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


DOCS_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} API</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script>
// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
window.ui = SwaggerUIBundle({{url: "/openapi.json", dom_id: "#swagger-ui", validatorUrl: null,
  deepLinking: true, tryItOutEnabled: true}});
</script>
</body>
</html>
"""
