"""The OpenAPI 3.1 document at ``/openapi.json``, built from the schemas the server validates with.

Each operation names its request model (the one ``schemas.parse_body`` validates the body with) and
its answer model (:mod:`sbert.server.answers`); pydantic writes their JSON Schema (2020-12, which
OpenAPI 3.1 takes as is), so a field, type, bound or default is written once. The server's own limits
(``--max-items``) go into the document as ``maxItems``. TEI's routes declare TEI's error body and
statuses; /rerank and /similarity, which take either body, declare both. ``/docs`` renders it with
Swagger UI's files from the installed ``swagger-ui-py`` package: nothing is fetched from a CDN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from sbert.server import answers, schemas
from sbert.server.settings import Limits

REF = "#/components/schemas/{model}"
TEI = "text-embeddings-inference"
ERRORS = {
    400: "The body is not UTF-8, not JSON, nested too deeply, or has a number too long",
    401: "No or a wrong API key",
    404: "Another model's name, or nothing loaded for this route",
    413: "The body or a list is over the server's limit, or an input over the model's with `truncate: false`",
    422: "A field of the wrong type, missing, empty, unknown, or out of range: the message names it",
    429: "Too many requests in flight or sentences queued; see `Retry-After`",
    500: "A bug in sbert (named; its traceback is in the server's log)",
    503: "The server is shutting down",
}
# TEI's routes: TEI's ErrorType, and the status text-embeddings-inference gives it.
TEI_ERRORS = {
    400: "`Empty`: an empty list (`inputs: []`); or `Validation`: the body is not UTF-8 or not JSON",
    401: "`Validation`: no or a wrong API key",
    413: "`Validation`: the body is over the server's byte limit",
    422: "`Validation`: a field of the wrong type, missing, unknown or out of range, a list over the "
    "server's limit, or an input over the model's with `truncate: false`: the message names it",
    424: "`Backend`: the model failed on the request (its traceback is in the server's log)",
    429: "`Overloaded`: too many requests in flight or sentences queued; see `Retry-After`",
    503: "`Unhealthy`: the server is shutting down",
}
TEI_STATUSES = (400, 413, 422, 424, 429, 503)


@dataclass(frozen=True)
class Operation:
    """One route: its request body's model (None: no body), its answer's model, and the statuses
    of its errors in sbert's shape (``errors``) and in TEI's (``tei_errors``)."""

    method: str
    path: str
    summary: str
    body: type[BaseModel] | tuple[type[BaseModel], ...] | None  # a tuple: any one of them (oneOf)
    answer: type[BaseModel] | tuple[type[BaseModel], ...]
    errors: tuple[int, ...] = (400, 404, 413, 422, 429, 503)
    tag: str = "sbert"
    tei_errors: tuple[int, ...] = ()
    media_type: str = "application/json"


OPERATIONS: list[Operation] = [
    Operation(
        "post",
        "/v1/embeddings",
        "Embed texts (OpenAI's body and answer)",
        schemas.EmbeddingRequest,
        answers.EmbeddingResponse,
        tag="OpenAI",
    ),
    Operation(
        "post",
        "/similarity",
        "Cosine of one sentence to each of a list: sbert's body or TEI's (under `inputs`)",
        (schemas.SimilarityRequest, schemas.TEISimilarityRequest),
        (answers.SimilarityResponse, answers.SimilarityScores),
        tei_errors=TEI_STATUSES,
    ),
    Operation(
        "post",
        "/search",
        "The nearest texts of the loaded index",
        schemas.SearchRequest,
        answers.SearchResponse,
    ),
    Operation(
        "post",
        "/rerank",
        "Texts ordered by relevance to a query: Cohere's and Jina's body (`documents`) or TEI's (`texts`)",
        (schemas.RerankRequest, schemas.TEIRerankRequest),
        (answers.RerankResponse, answers.TEIRerankResponse),
        tei_errors=TEI_STATUSES,
    ),
    Operation(
        "post",
        "/embed",
        "A vector per input (TEI)",
        schemas.EmbedRequest,
        answers.EmbedResponse,
        errors=(),
        tag=TEI,
        tei_errors=TEI_STATUSES,
    ),
    Operation(
        "post",
        "/embed_all",
        "Every token's vector of each input, no pooling (TEI)",
        schemas.EmbedAllRequest,
        answers.EmbedAllResponse,
        errors=(),
        tag=TEI,
        tei_errors=TEI_STATUSES,
    ),
    Operation(
        "post",
        "/tokenize",
        "Each input's tokens with character offsets (TEI)",
        schemas.TokenizeRequest,
        answers.TokenizeResponse,
        errors=(),
        tag=TEI,
        tei_errors=TEI_STATUSES,
    ),
    Operation(
        "post",
        "/decode",
        "Token ids back to text (TEI)",
        (schemas.DecodeRequest, schemas.DecodeBatchRequest),
        answers.DecodeResponse,
        errors=(),
        tag=TEI,
        tei_errors=TEI_STATUSES,
    ),
    Operation("get", "/info", "What is served (TEI)", None, answers.Info, errors=(), tag=TEI),
    Operation("get", "/health", "Liveness and what is served", None, answers.Health, errors=(503,)),
    Operation("get", "/v1/models", "The served models", None, answers.ModelList, errors=(), tag="OpenAI"),
    Operation(
        "get", "/metrics", "Prometheus metrics", None, answers.Metrics, errors=(), media_type="text/plain"
    ),
]
OPEN_PATHS = frozenset(["/health", "/openapi.json", "/docs"])  # no API key: probes and browsers
TEI_PATHS = frozenset(op.path for op in OPERATIONS if op.tag == TEI)  # TEI's errors, whatever the body
TEI_BODY = "sbert.tei_body"  # set in a request's scope once /rerank or /similarity read TEI's body


def speaks_tei(scope: Mapping[str, Any]) -> bool:
    """Whether a request's errors take TEI's shape: on TEI's own routes, and on /rerank and
    /similarity once the body turned out to be TEI's (before that, say unreadable JSON, sbert's).

    Examples:
        >>> speaks_tei({"path": "/embed"}), speaks_tei({"path": "/rerank"})
        (True, False)
        >>> speaks_tei({"path": "/rerank", TEI_BODY: True})
        True
    """
    return scope.get("path") in TEI_PATHS or bool(scope.get(TEI_BODY))


def build_spec(limits: Limits | None = None, api_key: bool = False, title: str = "sbert") -> dict[str, Any]:
    """The OpenAPI 3.1 document of :data:`OPERATIONS`.

    Args:
        limits: The server's limits, written into the schemas (``maxItems`` of list fields;
            default: ``sbert serve``'s).
        api_key: Whether requests need ``Authorization: Bearer KEY`` (all but :data:`OPEN_PATHS`).
        title: The document's title.

    Examples:
        >>> spec = build_spec()
        >>> spec["openapi"], sorted(spec["paths"])[:3]
        ('3.1.0', ['/decode', '/embed', '/embed_all'])
        >>> spec["components"]["schemas"]["EmbeddingRequest"]["properties"]["input"]["maxItems"]
        2048
    """
    limits = limits or Limits()
    models = [(model, "validation") for op in OPERATIONS for model in _each(op.body)]
    models += [(model, "serialization") for op in OPERATIONS for model in _each(op.answer)]
    models += [(answers.ErrorBody, "serialization"), (answers.TEIErrorBody, "serialization")]
    refs, definitions = models_json_schema(models, ref_template=REF)  # type: ignore[arg-type]

    def schema_of(chosen: type[BaseModel] | tuple[type[BaseModel], ...], mode: str) -> dict[str, Any]:
        if isinstance(chosen, tuple):
            return {"oneOf": [refs[(model, mode)] for model in chosen]}  # type: ignore[index]
        return dict(refs[(chosen, mode)])  # type: ignore[index]

    components: dict[str, Any] = definitions.get("$defs", {})
    for schema in components.values():
        for name in schemas.LIST_FIELDS:
            field = schema.get("properties", {}).get(name)
            if field is not None:
                field["maxItems"] = limits.max_items
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        operation: dict[str, Any] = {
            "summary": op.summary,
            "operationId": op.path.strip("/").replace("/", "_") or "root",
            "tags": [op.tag],
            "responses": {
                "200": {
                    "description": "OK",
                    "content": {op.media_type: {"schema": schema_of(op.answer, "serialization")}},
                },
                **{str(status): _error(op, status) for status in _statuses(op, api_key)},
            },
        }
        if op.body is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": schema_of(op.body, "validation")}},
            }
        if api_key and op.path not in OPEN_PATHS:
            operation["security"] = [{"bearer": []}]
        paths.setdefault(op.path, {})[op.method] = operation
    spec: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version(),
            "description": "Sentence embeddings over HTTP. Every error is "
            '`{"error": {"message", "type", "param", "code"}}`, its message naming the field and item; '
            "on text-embeddings-inference's routes (and /rerank and /similarity with TEI's bodies) it is "
            'TEI\'s, `{"error": "<message>", "error_type": "Validation"}`, with TEI\'s statuses.',
        },
        "paths": paths,
        "components": {"schemas": components},
    }
    if api_key:
        spec["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    return spec


def _each(models: type[BaseModel] | tuple[type[BaseModel], ...] | None) -> tuple[type[BaseModel], ...]:
    return () if models is None else models if isinstance(models, tuple) else (models,)


def _statuses(op: Operation, api_key: bool) -> list[int]:
    """The error statuses of ``op``, either shape, 401 included where a key is needed."""
    key = {401} if api_key and op.path not in OPEN_PATHS else set()
    return sorted(set(op.errors) | set(op.tei_errors) | key)


def _error(op: Operation, status: int) -> dict[str, Any]:
    """One error answer of ``op``: sbert's body, TEI's, or either (/rerank and /similarity)."""
    # The gate refuses a request without the key before its body is read: TEI's shape on TEI's
    # own routes only.
    sbert = status in op.errors or (status == 401 and op.tag != TEI)
    tei = status in op.tei_errors or (status == 401 and op.tag == TEI)
    refs = [
        {"$ref": REF.format(model=model.__name__)}
        for model, shown in ((answers.ErrorBody, sbert), (answers.TEIErrorBody, tei))
        if shown
    ]
    descriptions = ([ERRORS[status]] if sbert else []) + ([TEI_ERRORS[status]] if tei else [])
    description = ". With TEI's body, ".join(descriptions)
    schema = refs[0] if len(refs) == 1 else {"oneOf": refs}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def version() -> str:
    try:
        return metadata.version("sbert")
    except metadata.PackageNotFoundError:  # run from a source tree
        return "0.0.0"


def swagger_ui_dir() -> Path | None:
    """Swagger UI's files from the ``swagger-ui-py`` package (None: not installed; /docs says so)."""
    try:
        import swagger_ui
    except ImportError:
        return None
    folder = Path(swagger_ui.__file__).parent / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


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
