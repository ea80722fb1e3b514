"""The one route table: each operation's method, path, handler, request and answer models, and the
statuses of its errors. The app (:func:`sbert.server.app.create_app`) routes by it and the OpenAPI
document (:func:`sbert.server.openapi.build_spec`) is written from it, so neither can name a route the
other lacks.

text-embeddings-inference's routes are TEI's (router/src/http/server.rs, read at commit
bc0fa321bfeb17126a9f0336835ec2b98d1946d1): ``POST /`` and ``/invocations`` embed (TEI serves an
embedding model so), ``GET /``, ``/ping`` and ``/health`` answer health without an API key, and the
OpenAI route is served as ``/embeddings`` and ``/v1/embeddings``. OpenAI's model list is at ``/models``
too, as infinity serves it, so a client whose base URL has no ``/v1`` works unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from sbert.server import answers, handlers, openai_schemas, schemas, tei, tei_schemas

Handler = Callable[[Request], Awaitable[Response]]
TEI = "text-embeddings-inference"
SBERT_ERRORS = (400, 404, 413, 422, 429, 503)
TEI_STATUSES = (400, 413, 422, 424, 429, 503)


@dataclass(frozen=True)
class Operation:
    """One route: its handler, its request body's model (None: no body), its answer's model, the
    statuses of its errors in sbert's shape (``errors``) and in TEI's (``tei_errors``), and the
    names of its path parameters (``/v1/models/{model}``: ``("model",)``)."""

    method: str
    path: str
    summary: str
    handler: Handler
    body: type[BaseModel] | tuple[type[BaseModel], ...] | None  # a tuple: any one of them (oneOf)
    answer: type[BaseModel] | tuple[type[BaseModel], ...]
    errors: tuple[int, ...] = SBERT_ERRORS
    tag: str = "sbert"
    tei_errors: tuple[int, ...] = ()
    media_type: str = "application/json"
    path_params: tuple[str, ...] = ()

    @property
    def route_path(self) -> str:
        """The path as Starlette matches it: a parameter may hold ``/`` (``org/model``)."""
        path = self.path
        for name in self.path_params:
            path = path.replace(f"{{{name}}}", f"{{{name}:path}}")
        return path


def _tei(method: str, path: str, summary: str, handler: Handler, body: Any, answer: Any) -> Operation:
    return Operation(method, path, summary, handler, body, answer, (), TEI, TEI_STATUSES)


_EMBEDDINGS = "Embed texts or token ids (OpenAI's body and answer)"
_MODELS = "The served models: every name a request may give (OpenAI's list)"
_HEALTH = "Liveness and what is served (no API key needed)"
_EMBEDDING_BODY = (openai_schemas.EmbeddingRequest, openai_schemas.EmbeddingIdsRequest)

OPERATIONS: list[Operation] = [
    *(
        Operation(
            "post",
            path,
            _EMBEDDINGS,
            handlers.embeddings,
            _EMBEDDING_BODY,
            answers.EmbeddingResponse,
            tag="OpenAI",
        )
        for path in ("/v1/embeddings", "/embeddings")
    ),
    Operation(
        "post",
        "/similarity",
        "Cosine of one sentence to each of a list: sbert's body or TEI's (under `inputs`, the default model)",
        handlers.similarity,
        (openai_schemas.SimilarityRequest, tei_schemas.TEISimilarityRequest),
        (answers.SimilarityResponse, answers.SimilarityScores),
        tei_errors=TEI_STATUSES,
    ),
    Operation(
        "post",
        "/search",
        "The nearest texts of the index loaded with the model",
        handlers.search,
        openai_schemas.SearchRequest,
        answers.SearchResponse,
    ),
    Operation(
        "post",
        "/rerank",
        "Texts ordered by relevance to a query: Cohere's, Jina's and infinity's body (`documents`) "
        "or TEI's (`texts`)",
        handlers.rerank,
        (openai_schemas.RerankRequest, tei_schemas.TEIRerankRequest),
        (answers.RerankResponse, answers.TEIRerankResponse),
        tei_errors=TEI_STATUSES,
    ),
    _tei(
        "post",
        "/embed",
        "A vector per input (TEI; the default model)",
        tei.embed,
        tei_schemas.EmbedRequest,
        answers.EmbedResponse,
    ),
    *(
        _tei(
            "post",
            path,
            f"TEI's {what}: /embed's body (a vector per input; a sparse model: /embed_sparse's), or "
            "/similarity's (`inputs` an object: a cosine per sentence); the default model",
            tei.root,
            (tei_schemas.EmbedRequest, tei_schemas.TEISimilarityRequest),
            (answers.EmbedResponse, answers.SimilarityScores, answers.EmbedSparseResponse),
        )
        for path, what in (("/", "root route"), ("/invocations", "SageMaker route"))
    ),
    _tei(
        "post",
        "/embed_sparse",
        "A sparse vector per input, its non-zero weights as `{index, value}` (TEI; the default model, "
        "a SPLADE one: a dense model gets TEI's 424)",
        tei.embed_sparse,
        tei_schemas.EmbedSparseRequest,
        answers.EmbedSparseResponse,
    ),
    _tei(
        "post",
        "/embed_all",
        "Every token's vector of each input, no pooling (TEI; the default model; a static model: its table's rows)",
        tei.embed_all,
        tei_schemas.EmbedAllRequest,
        answers.EmbedAllResponse,
    ),
    _tei(
        "post",
        "/tokenize",
        "Each input's tokens with character offsets (TEI; the default model)",
        tei.tokenize,
        tei_schemas.TokenizeRequest,
        answers.TokenizeResponse,
    ),
    _tei(
        "post",
        "/decode",
        "Token ids back to text (TEI), or sparse vectors (`inputs`, as /embed_sparse answers) to their "
        "tokens, heaviest first; the default model",
        tei.decode,
        (tei_schemas.DecodeRequest, tei_schemas.DecodeBatchRequest, tei_schemas.SparseDecodeRequest),
        (answers.DecodeResponse, answers.SparseDecodeResponse),
    ),
    Operation(
        "get", "/info", "What is served (TEI; the default model)", tei.info, None, answers.Info, (), TEI
    ),
    Operation("get", "/health", _HEALTH, handlers.health, None, answers.Health, (503,)),
    *(
        Operation(
            "get", path, f"{_HEALTH} (TEI's {what})", handlers.health, None, answers.Health, (), TEI, (503,)
        )
        for path, what in (("/", "root route"), ("/ping", "SageMaker route"))
    ),
    *(
        Operation("get", path, _MODELS, handlers.models, None, answers.ModelList, (), "OpenAI")
        for path in ("/v1/models", "/models")
    ),
    Operation(
        "get",
        "/v1/models/{model}",
        "One served model (OpenAI's `models.retrieve`)",
        handlers.model,
        None,
        answers.ModelCard,
        (404,),
        "OpenAI",
        path_params=("model",),
    ),
    Operation(
        "get",
        "/metrics",
        "Prometheus metrics",
        handlers.prometheus,
        None,
        answers.Metrics,
        (),
        media_type="text/plain",
    ),
]
# No API key: probes and browsers (TEI's health routes are public too). GET only: POST / embeds.
OPEN_PATHS = frozenset(["/health", "/", "/ping", "/openapi.json", "/docs"])
TEI_PATHS = frozenset(op.path for op in OPERATIONS if op.tag == TEI)  # TEI's errors, whatever the body


def is_open(method: str, path: str) -> bool:
    """Whether a request needs no API key.

    Examples:
        >>> is_open("GET", "/"), is_open("POST", "/"), is_open("GET", "/v1/models")
        (True, False, False)
    """
    return path in OPEN_PATHS and method.upper() in ("GET", "HEAD")


def speaks_tei(scope: Mapping[str, Any]) -> bool:
    """Whether a request's errors take TEI's shape: on TEI's own routes, and on /rerank and
    /similarity once the body turned out to be TEI's (before that, say unreadable JSON, sbert's).

    Examples:
        >>> speaks_tei({"path": "/embed"}), speaks_tei({"path": "/rerank"})
        (True, False)
        >>> speaks_tei({"path": "/rerank", schemas.TEI_BODY: True})
        True
    """
    return scope.get("path") in TEI_PATHS or bool(scope.get(schemas.TEI_BODY))
