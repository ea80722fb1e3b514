"""The OpenAPI 3.1 document at ``/openapi.json``, built from the schemas the server validates with.

Each operation names its request model (the one ``schemas.parse_body`` validates the body with) and
its answer model (:mod:`sbert.server.answers`); pydantic writes their JSON Schema (2020-12, which
OpenAPI 3.1 takes as is), so a field, type, bound or default is written once. The server's own limits
(``--max-items``) go into the document as ``maxItems`` (not on one input's token ids: a list of
numbers is one input, its length tokens). TEI's routes declare TEI's error body and
statuses; /rerank and /similarity, which take either body, declare both. ``/docs`` renders it with
Swagger UI's files from the installed ``swagger-ui-py`` package: nothing is fetched from a CDN.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from sbert.server import answers, body_fields, schemas
from sbert.server.routes import OPERATIONS, TEI, Operation, is_open
from sbert.server.service import version
from sbert.server.settings import Limits

REF = "#/components/schemas/{model}"
ERRORS = {
    400: "The body is not UTF-8, not JSON, nested too deeply, or has a number too long",
    401: "No or a wrong API key",
    404: "A model not served here (the message lists every served name), or nothing loaded for this route",
    413: "The body or a list is over the server's limit, or an input over the model's with `truncate: false`",
    422: "A field of the wrong type, missing, empty, unknown, or out of range, or something the model "
    "cannot do (token ids with a prompt, `raw_scores` without a cross-encoder, dense vectors of a sparse "
    "model: `code` `sparse_model`): the message names it",
    429: "Too many requests in flight or sentences queued; see `Retry-After`",
    500: "A bug in sbert (named; its traceback is in the server's log)",
    503: "The server is shutting down",
}
# TEI's routes: TEI's ErrorType, and the status text-embeddings-inference gives it (its
# ``From<&ErrorType> for StatusCode``, router/src/http/server.rs at commit
# bc0fa321bfeb17126a9f0336835ec2b98d1946d1), or axum's where TEI's JSON extractor refuses the body.
TEI_ERRORS = {
    400: "`Empty`: an empty list (`inputs: []`); or the body is not UTF-8 or not JSON (axum's 400)",
    401: "`Validation`: no or a wrong API key",
    413: "`Validation`: a list over the server's limit, an input over the model's with `truncate: false`, "
    "an unknown `prompt_name`, or the body over the server's byte limit",
    422: "`Tokenizer`: a token id the tokenizer does not have; or `Validation`: a field of the wrong type, "
    "missing or unknown (axum's 422), or `raw_scores` without a cross-encoder: the message names it",
    424: "`Backend`: the model failed on the request (its traceback is in the server's log), or it is "
    "the other kind: a sparse (SPLADE) model's /embed, /embed_all, /similarity or /rerank, a dense "
    "model's /embed_sparse (TEI's \"Model is not an embedding model with SPLADE pooling\")",
    429: "`Overloaded`: too many requests in flight or sentences queued; see `Retry-After`",
    503: "`Unhealthy`: the server is shutting down",
}


def build_spec(
    limits: Limits | None = None,
    api_key: bool = False,
    title: str = "sbert",
    prompts: Sequence[str] | None = None,
    dimension: int | None = None,
    cross_encoder: bool | None = None,
    vocabulary: int | None = None,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of :data:`OPERATIONS`.

    Args:
        limits: The server's limits, written into the schemas (``maxItems`` of list fields;
            default: ``sbert serve``'s).
        api_key: Whether requests need ``Authorization: Bearer KEY`` (all but ``routes.OPEN_PATHS``).
        title: The document's title.
        prompts: The served models' prompt names: ``prompt_name`` takes one of them or null (none
            given: any string, for a document built without a model).
        dimension: The largest vector the served models give: ``dimensions`` at most this (None:
            no bound).
        cross_encoder: Whether a cross-encoder is served: without one, ``raw_scores`` of /rerank's
            bodies (Cohere's and TEI's) is ``false`` only (None: either).
        vocabulary: The default model's vocabulary size: a token id is less (None: no bound).

    Examples:
        >>> spec = build_spec()
        >>> spec["openapi"], sorted(spec["paths"])[:3]
        ('3.1.0', ['/', '/decode', '/embed'])
        >>> spec["components"]["schemas"]["EmbeddingRequest"]["properties"]["input"]["maxItems"]
        2048
    """
    limits = limits or Limits()
    refs, components = _components(limits, prompts, dimension, cross_encoder, vocabulary)
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op, refs, api_key)
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


Refs = dict[tuple[type[BaseModel], str], dict[str, Any]]  # (model, mode) → its "$ref"


def _components(
    limits: Limits,
    prompts: Sequence[str] | None,
    dimension: int | None,
    cross_encoder: bool | None,
    vocabulary: int | None,
) -> tuple[Refs, dict[str, Any]]:
    """Every body's and answer's schema, bounded by the server's limits (:func:`build_spec`'s
    arguments), and each model's ``$ref`` to it."""
    models = [(model, "validation") for op in OPERATIONS for model in _each(op.body)]
    models += [(model, "serialization") for op in OPERATIONS for model in _each(op.answer)]
    models += [(answers.ErrorBody, "serialization"), (answers.TEIErrorBody, "serialization")]
    refs, definitions = models_json_schema(models, ref_template=REF)  # type: ignore[arg-type]
    components: dict[str, Any] = definitions.get("$defs", {})
    for schema in components.values():
        _serve(schema.get("properties", {}), limits, prompts, dimension)
    if vocabulary is not None:
        _bound_token_ids(components, vocabulary - 1)
    if cross_encoder is False:  # the server refuses `raw_scores: true` then, in either body
        for body in ("RerankRequest", "TEIRerankRequest"):
            components[body]["properties"]["raw_scores"]["enum"] = [False]
    return refs, components  # type: ignore[return-value]


def _schema_of(
    refs: Refs, chosen: type[BaseModel] | tuple[type[BaseModel], ...], mode: str
) -> dict[str, Any]:
    if isinstance(chosen, tuple):
        return {"oneOf": [refs[(model, mode)] for model in chosen]}
    return dict(refs[(chosen, mode)])


def _operation(op: Operation, refs: Refs, api_key: bool) -> dict[str, Any]:
    """One operation of the document: its answer, its errors, its path parameters and body."""
    operation: dict[str, Any] = {
        "summary": op.summary,
        "operationId": f"{op.method}_{re.sub('[^a-z0-9]+', '_', op.path).strip('_') or 'root'}",
        "tags": [op.tag],
        "responses": {
            "200": {
                "description": "OK",
                "content": {op.media_type: {"schema": _schema_of(refs, op.answer, "serialization")}},
            },
            **{str(status): _error(op, status) for status in _statuses(op, api_key)},
        },
    }
    if op.path_params:
        operation["parameters"] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in op.path_params
        ]
    if op.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _schema_of(refs, op.body, "validation")}},
        }
    if api_key and not is_open(op.method, op.path):
        operation["security"] = [{"bearer": []}]
    return operation


def _serve(
    properties: dict[str, Any], limits: Limits, prompts: Sequence[str] | None, dimension: int | None
) -> None:
    """Write what the server refuses beyond the models' own bounds into one body's fields."""
    for name in schemas.LIST_FIELDS:
        field = properties.get(name)
        if field is not None:
            _bound_items(field, limits.max_items)
    field = properties.get("prompt_name")
    if field is not None and prompts is not None:
        named = [{"type": "string", "enum": list(prompts)}] if prompts else []
        field["anyOf"] = [*named, {"type": "null"}]
    field = properties.get("dimensions")
    if field is not None and dimension is not None:
        for branch in field["anyOf"]:  # an integer or null
            if branch.get("type") == "integer":
                branch["maximum"] = dimension


def _bound_items(field: dict[str, Any], max_items: int) -> None:
    """``maxItems`` on a list field, but not on one input's token ids (``input: [101, 2023]``): that
    list is one input, its length tokens (``schemas.one_row_of_ids``), so only the list of lists
    beside it is bounded in items."""
    branches = field.get("anyOf", [field])
    if not any(_row_of_ids(branch) for branch in branches):
        field["maxItems"] = max_items
        return
    for branch in branches:
        if branch.get("type") == "array" and not _row_of_ids(branch):
            branch["maxItems"] = max_items


def _row_of_ids(schema: dict[str, Any]) -> bool:
    items = schema.get("items")
    return isinstance(items, dict) and items.get("description") == body_fields.TOKEN_ID


def _bound_token_ids(schema: Any, largest: int) -> None:
    """``maximum`` on every token id (:data:`body_fields.TOKEN_ID`) of the document's bodies."""
    if isinstance(schema, dict):
        if schema.get("description") == body_fields.TOKEN_ID:
            schema["maximum"] = largest
        for value in schema.values():
            _bound_token_ids(value, largest)
    elif isinstance(schema, list):
        for value in schema:
            _bound_token_ids(value, largest)


def _each(models: type[BaseModel] | tuple[type[BaseModel], ...] | None) -> tuple[type[BaseModel], ...]:
    return () if models is None else models if isinstance(models, tuple) else (models,)


def _statuses(op: Operation, api_key: bool) -> list[int]:
    """The error statuses of ``op``, either shape, 401 included where a key is needed."""
    key = {401} if api_key and not is_open(op.method, op.path) else set()
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


def swagger_ui_dir() -> Path | None:
    """Swagger UI's files from the ``swagger-ui-py`` package (None: not installed; /docs says so)."""
    try:
        import swagger_ui
    except ImportError:
        return None
    folder = Path(swagger_ui.__file__).parent / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None
