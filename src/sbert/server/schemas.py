"""Request bodies parsed strictly: which body a route got, and the error every bad one gets.

The bodies are sbert's own (:mod:`sbert.server.openai_schemas`: OpenAI's, Cohere's) and TEI's
(:mod:`sbert.server.tei_schemas`), on the shared field types of :mod:`sbert.server.body_fields`; the
error is :class:`~sbert.server.errors.APIError`. Bodies are parsed in three steps so that each failure has its own status: bytes that are not UTF-8
or not JSON are a 400 naming the byte or line; a list longer than ``max_items`` is a 413 before any
item is looked at (one list of token ids is one input: its length is tokens, not items); then the schema
(strict: no ``"5"`` for 5, no unknown fields) is a 422 naming the field and the item's index, e.g. ``input[3]: expected a string, got null``. On TEI's routes the same
errors take TEI's shape and statuses (:meth:`APIError.answer`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sbert.server.body_fields import StrictBody
from sbert.server.errors import TEI_VALIDATION, APIError, TEIErrorType
from sbert.server.openai_schemas import (
    EmbeddingIdsRequest,
    EmbeddingRequest,
    RerankRequest,
    SimilarityRequest,
)
from sbert.server.tei_schemas import (
    DecodeBatchRequest,
    DecodeRequest,
    SparseDecodeRequest,
    TEIRerankRequest,
    TEISimilarityRequest,
)

TEI_BODY = "sbert.tei_body"  # set in a request's scope once /rerank or /similarity read TEI's body
LIST_FIELDS = ("input", "sentences", "documents", "inputs", "texts", "ids")
Body = TypeVar("Body", bound=StrictBody)


def embedding_shape(data: dict[str, Any]) -> type[StrictBody]:
    """``/v1/embeddings`` takes texts or token ids (a list whose first item is a number or a list)."""
    given = data.get("input")
    first = given[0] if isinstance(given, list) and given else None
    ids = isinstance(first, (int, float, list)) and not isinstance(first, bool)
    return EmbeddingIdsRequest if ids else EmbeddingRequest


def rerank_shape(data: dict[str, Any]) -> type[StrictBody]:
    """``/rerank`` takes Cohere's body (``documents``) or TEI's (``texts``)."""
    return TEIRerankRequest if "texts" in data else RerankRequest


def similarity_shape(data: dict[str, Any]) -> type[StrictBody]:
    """``/similarity`` takes sbert's body or TEI's (everything under ``inputs``)."""
    return TEISimilarityRequest if "inputs" in data else SimilarityRequest


def decode_shape(data: dict[str, Any]) -> type[StrictBody]:
    """``/decode`` takes one list of ids or a list of lists (told apart here, so that an error names
    ``ids[3]`` or ``ids[1][3]``, not a branch of a union), or sparse vectors under ``inputs``."""
    if "inputs" in data:
        return SparseDecodeRequest
    ids = data.get("ids")
    many = isinstance(ids, list) and any(isinstance(item, list) for item in ids)
    return DecodeBatchRequest if many else DecodeRequest


def parse_body(
    raw: bytes, schema: type[Body] | Callable[[dict[str, Any]], type[Body]], max_items: int
) -> Body:
    """Decode, count and validate a request body; raises :class:`APIError` 400, 413 or 422.

    ``schema`` is the body's model, or a function of the decoded object that picks one (``/rerank``).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise APIError(
            400, f"body: not valid UTF-8 (byte {error.start}: {raw[error.start : error.start + 1]!r})", "body"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise APIError(
            400, f"body: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}", "body"
        ) from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise APIError(400, "body: JSON nested too deeply", "body") from None
    except ValueError:  # an integer of more digits than Python converts (4300 by default)
        raise APIError(
            400, f"body: a number of more than {sys.get_int_max_str_digits()} digits", "body"
        ) from None
    if not isinstance(data, dict):
        raise APIError(422, f"body: expected a JSON object, got {_json_type(data)}", "body")
    # The model is picked first: on /rerank and /similarity it tells TEI's body from sbert's, and
    # with it the shape of every error below.
    model: type[BaseModel] = schema if isinstance(schema, type) else schema(data)
    lists = [(name, data.get(name)) for name in LIST_FIELDS]
    if isinstance(data.get("inputs"), dict):  # TEI's /similarity: the sentences are under inputs
        lists.append(("inputs.sentences", data["inputs"].get("sentences")))
    for name, items in lists:
        if isinstance(items, list) and len(items) > max_items and not one_row_of_ids(name, items):
            raise APIError(
                413,
                f"{name}: {len(items)} items, more than the limit of {max_items} per request",
                name,
                tei=TEI_VALIDATION,  # TEI's "batch size > maximum allowed batch size"
            )
    try:
        return model.model_validate(data)  # type: ignore[return-value]
    except ValidationError as error:
        raise validation_error(error, model) from None


def one_row_of_ids(name: str, items: list[Any]) -> bool:
    """Whether ``items`` is one input's token ids (``input: [101, 2023]``, ``ids: [101]``): one input,
    as TEI and OpenAI read a flat list of numbers, so its length is tokens, bounded as a text's are
    (by the body's bytes and the model's limit), not items against ``max_items``; a list of lists
    is that many inputs. The first item decides, as :func:`embedding_shape` decides.

    Examples:
        >>> one_row_of_ids("input", [101] * 3000), one_row_of_ids("input", [[101]] * 3000)
        (True, False)
        >>> one_row_of_ids("inputs", [101] * 3000)  # TEI's /embed takes text only
        False
    """
    first = items[0] if items else None
    return name in ("input", "ids") and isinstance(first, (int, float)) and not isinstance(first, bool)


def validation_error(error: ValidationError, schema: type[BaseModel]) -> APIError:
    """A 422 naming the first bad field (``input[3]``) and what was wrong with it."""
    first = error.errors(include_url=False)[0]
    param = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    kind = first["type"]
    if kind == "extra_forbidden":
        fields = ", ".join(schema.model_fields)
        message = f"{param}: unknown field (this endpoint takes {fields})"
    elif kind == "missing":
        message = f"{param}: required"
    elif kind == "too_short":
        message = f"{param}: must not be empty"
    elif param in ("input", "sentences", "documents", "inputs") and kind == "list_type":
        message = f"{param}: expected a string or a list of strings, got {_json_type(first['input'])}"
    else:
        message = (
            f"{param}: {first['msg'].replace('Input should', 'should')}, got {_json_type(first['input'])}"
        )
    # TEI tells an empty list (``inputs: []``) apart: 400, "Empty"; a body its JSON extractor cannot
    # read into its request struct is axum's 422 (in plain text there; TEI's shape here).
    tei: tuple[int, TEIErrorType] = (400, "Empty") if kind == "too_short" else (422, "Validation")
    return APIError(422, message, param or "body", kind, tei=tei)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "an empty list"
    return "an object"
