"""Request bodies, parsed strictly, and the JSON error every bad one gets.

Bodies are parsed in three steps so that each failure has its own status: bytes that are not UTF-8
or not JSON are a 400 naming the byte or line; a list longer than ``max_items`` is a 413 before any
item is looked at (one list of token ids is one input: its length is tokens, not items); then the schema (strict: no ``"5"`` for 5, no unknown fields) is a 422 naming the
field and the item's index, e.g. ``input[3]: expected a string, got null``. On TEI's routes the same
errors take TEI's shape and statuses (:meth:`APIError.answer`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictStr, ValidationError

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "unavailable_error",
}


# text-embeddings-inference's ErrorType (router/src/lib.rs), written as serde writes it, and the
# status TEI gives each (``impl From<&ErrorType> for StatusCode`` in router/src/http/server.rs, read at
# commit bc0fa321bfeb17126a9f0336835ec2b98d1946d1): Validation is 413, Tokenizer 422, Empty 400.
TEIErrorType = Literal["Unhealthy", "Backend", "Overloaded", "Validation", "Tokenizer", "Empty"]
TEI_STATUS: dict[TEIErrorType, int] = {
    "Unhealthy": 503,
    "Backend": 424,
    "Overloaded": 429,
    "Tokenizer": 422,
    "Validation": 413,
    "Empty": 400,
}
TEI_ERROR_TYPES: dict[int, TEIErrorType] = {429: "Overloaded", 503: "Unhealthy"}
# What TEI validates itself (a list over its limit, an input over the model's, an unknown prompt):
# its ErrorType::Validation, 413.
TEI_VALIDATION: tuple[int, TEIErrorType] = (TEI_STATUS["Validation"], "Validation")
TEI_BODY = "sbert.tei_body"  # set in a request's scope once /rerank or /similarity read TEI's body


class APIError(Exception):
    """An HTTP error with an OpenAI-style body: ``{"error": {"message", "type", "param", "code"}}``;
    on TEI's routes, TEI's: ``{"error": "<message>", "error_type": "Validation"}``.

    Args:
        status: The status on sbert's routes.
        message: What was wrong, starting with the field and item (``input[3]: ...``).
        param: The field and item, or ``body``.
        code: A machine-readable reason where there is one (``input_too_long``).
        headers: Extra headers (``Retry-After``).
        tei: TEI's status and error type where they are not the default of ``status`` (see
            :meth:`tei_status`): TEI answers an unknown prompt name with 413 ``Validation``, where
            sbert answers 422.
    """

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        tei: tuple[int, TEIErrorType] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers or {}
        self.tei = tei

    def tei_status(self) -> tuple[int, TEIErrorType]:
        """TEI's status and ``error_type``: ``tei`` if given, else the status with its TEI type
        (429 Overloaded, 503 Unhealthy, 5xx Backend; any other 4xx is a bad request: Validation).

        Examples:
            >>> APIError(429, "busy").tei_status(), APIError(413, "body: too big").tei_status()
            ((429, 'Overloaded'), (413, 'Validation'))
            >>> APIError(422, "prompt_name: unknown", tei=TEI_VALIDATION).tei_status()
            (413, 'Validation')
        """
        if self.tei is not None:
            return self.tei
        kind = TEI_ERROR_TYPES.get(self.status, "Backend" if self.status >= 500 else "Validation")
        return self.status, kind

    def answer(self, tei: bool = False) -> tuple[int, bytes]:
        """The status and body: sbert's (OpenAI's shape), or with ``tei`` TEI's.

        Examples:
            >>> APIError(422, "inputs[1]: required", "inputs[1]").answer(tei=True)
            (422, b'{"error": "inputs[1]: required", "error_type": "Validation"}')
        """
        if not tei:
            return self.status, self.body()
        status, kind = self.tei_status()
        return status, json.dumps({"error": self.message, "error_type": kind}).encode()

    def body(self) -> bytes:
        error = {
            "message": self.message,
            "type": ERROR_TYPES.get(
                self.status, "invalid_request_error" if self.status < 500 else "server_error"
            ),
            "param": self.param,
            "code": self.code,
        }
        return json.dumps({"error": error}).encode()


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _integral(value: Any) -> Any:
    """``1.0`` as ``1``: JSON has one number type, and JSON Schema's ``integer`` takes ``1.0``."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Whole numbers, written ``3`` or ``3.0`` (never ``"3"`` or ``true``: the models stay strict). The
# bound comes before the validator: so pydantic writes it into the document as ``minimum`` (after it,
# as an unknown ``ge`` keyword that no client or fuzzer reads).
PositiveInteger = Annotated[int, Field(ge=1), BeforeValidator(_integral)]
TOKEN_ID = "A token id of the model's tokenizer"  # marks the fields the document bounds by the vocabulary
TokenId = Annotated[int, Field(ge=0, description=TOKEN_ID), BeforeValidator(_integral)]
TopK = Annotated[int, Field(ge=1, le=1000), BeforeValidator(_integral)]


FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32


Texts = Annotated[list[StrictStr], Field(min_length=1)]
# The OpenAPI schema says what a client may send (a string or a list), not what it becomes.
OneOrMoreTexts = Annotated[
    list[StrictStr],
    BeforeValidator(_one_or_many, json_schema_input_type=str | list[str]),
    Field(min_length=1),
]


def _one_row_or_many(value: Any) -> Any:
    one = isinstance(value, list) and bool(value) and not isinstance(value[0], list)
    return [value] if one else value


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class EmbeddingRequest(_Body):
    """OpenAI's ``POST /v1/embeddings`` body, plus ``truncate`` and ``prompt_name`` (default: the
    model's default prompt)."""

    input: OneOrMoreTexts
    model: StrictStr | None = None
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: PositiveInteger | None = None
    user: StrictStr | None = None
    truncate: bool = True
    prompt_name: StrictStr | None = None


TokenIds = Annotated[list[TokenId], Field(min_length=1)]


class EmbeddingIdsRequest(EmbeddingRequest):
    """OpenAI's ``POST /v1/embeddings`` body with token ids for ``input`` (one list, or a list of
    lists): each list is one input's tokens as the model's tokenizer gives them for the text,
    without special tokens; the model adds its own (BERT's ``[CLS]`` and ``[SEP]``) as for text."""

    input: Annotated[  # type: ignore[assignment]
        list[TokenIds],
        BeforeValidator(_one_row_or_many, json_schema_input_type=TokenIds | list[TokenIds]),
        Field(min_length=1),
    ]


class SimilarityRequest(_Body):
    """``POST /similarity``: cosine similarity of one sentence to each of a list."""

    source_sentence: StrictStr
    sentences: Texts
    model: StrictStr | None = None
    truncate: bool = True
    prompt_name: StrictStr | None = None


class SearchRequest(_Body):
    """``POST /search``: the ``top_k`` nearest texts of the loaded index."""

    query: StrictStr
    top_k: TopK = 10
    model: StrictStr | None = None
    truncate: bool = True
    prompt_name: StrictStr | None = None  # default: the model's query prompt


class Document(_Body):
    """A document as Cohere's and infinity's rerank take it: ``{"text": ...}``."""

    text: StrictStr


def _texts_of(value: Any) -> Any:
    """``{"text": ...}`` documents as their text (anything else is left for the schema to refuse)."""
    if not isinstance(value, list):
        return value
    return [item["text"] if isinstance(item, dict) and set(item) == {"text"} else item for item in value]


class RerankRequest(_Body):
    """``POST /rerank``: documents ordered by relevance to the query (Cohere's, Jina's and infinity's
    shape): each document a string or ``{"text": ...}``."""

    query: StrictStr
    documents: Annotated[
        list[StrictStr],
        BeforeValidator(_texts_of, json_schema_input_type=list[str | Document]),
        Field(min_length=1),
    ]
    top_n: PositiveInteger | None = None
    return_documents: bool = True
    raw_scores: bool = False  # the cross-encoder's logit rather than its sigmoid (infinity's field)
    model: StrictStr | None = None
    truncate: bool = True


# text-embeddings-inference's bodies (TEI 1.x), field for field. Unlike sbert's own routes, TEI
# refuses an input over the model's limit unless the body says ``truncate: true``.
Direction = Literal["Right", "Left", "right", "left"]


class EmbedRequest(_Body):
    """TEI's ``POST /embed``: one vector per input."""

    inputs: OneOrMoreTexts
    normalize: bool = True
    truncate: bool | None = False
    truncation_direction: Direction = "Right"
    prompt_name: StrictStr | None = None
    dimensions: PositiveInteger | None = None


class EmbedAllRequest(_Body):
    """TEI's ``POST /embed_all``: every token's vector of each input, no pooling."""

    inputs: OneOrMoreTexts
    truncate: bool | None = False
    truncation_direction: Direction = "Right"
    prompt_name: StrictStr | None = None


class TokenizeRequest(_Body):
    """TEI's ``POST /tokenize``: each input's tokens with their character offsets."""

    inputs: OneOrMoreTexts
    add_special_tokens: bool = True
    prompt_name: StrictStr | None = None


class DecodeRequest(_Body):
    """TEI's ``POST /decode`` of one list of token ids: ``["text"]``."""

    ids: TokenIds
    skip_special_tokens: bool = True


class DecodeBatchRequest(_Body):
    """TEI's ``POST /decode`` of several lists of token ids: a text for each."""

    ids: Annotated[list[TokenIds], Field(min_length=1)]
    skip_special_tokens: bool = True


class EmbedSparseRequest(_Body):
    """TEI's ``POST /embed_sparse``: a sparse vector per input (a SPLADE model), as
    ``[{"index", "value"}, ...]``; TEI's ``EmbedSparseRequest`` field for field."""

    inputs: OneOrMoreTexts
    truncate: bool | None = False
    truncation_direction: Direction = "Right"
    prompt_name: StrictStr | None = None


class SparseValue(_Body):
    """One non-zero weight of a sparse vector: its vocabulary index and its value (TEI's ``SparseValue``)."""

    index: Annotated[int, Field(ge=0, description=TOKEN_ID), BeforeValidator(_integral)]
    value: Annotated[float, Field(ge=-FLOAT32_MAX, le=FLOAT32_MAX)]  # a float32: finite, no NaN


class SparseDecodeRequest(_Body):
    """``POST /decode`` of sparse vectors (what ``/embed_sparse`` answers): each vector's tokens
    with their weights, heaviest first, at most ``top_k`` (default: every non-zero one)."""

    inputs: Annotated[list[list[SparseValue]], Field(min_length=1)]
    top_k: PositiveInteger | None = None


class TEIRerankRequest(_Body):
    """TEI's ``POST /rerank`` (a body with ``texts``): ``[{"index", "score"[, "text"]}]``, best first."""

    query: StrictStr
    texts: Texts
    raw_scores: bool = False
    return_text: bool = False
    truncate: bool | None = False
    truncation_direction: Direction = "Right"


class SimilarityInput(_Body):
    source_sentence: StrictStr
    sentences: Texts


class SimilarityParameters(_Body):
    prompt_name: StrictStr | None = None
    truncate: bool | None = False
    truncation_direction: Direction = "Right"


class TEISimilarityRequest(_Body):
    """TEI's ``POST /similarity`` (a body with ``inputs``): ``[cosine, ...]``, one per sentence."""

    inputs: SimilarityInput
    parameters: SimilarityParameters | None = None


LIST_FIELDS = ("input", "sentences", "documents", "inputs", "texts", "ids")
Body = TypeVar("Body", bound=_Body)


def embedding_shape(data: dict[str, Any]) -> type[_Body]:
    """``/v1/embeddings`` takes texts or token ids (a list whose first item is a number or a list)."""
    given = data.get("input")
    first = given[0] if isinstance(given, list) and given else None
    ids = isinstance(first, (int, float, list)) and not isinstance(first, bool)
    return EmbeddingIdsRequest if ids else EmbeddingRequest


def rerank_shape(data: dict[str, Any]) -> type[_Body]:
    """``/rerank`` takes Cohere's body (``documents``) or TEI's (``texts``)."""
    return TEIRerankRequest if "texts" in data else RerankRequest


def similarity_shape(data: dict[str, Any]) -> type[_Body]:
    """``/similarity`` takes sbert's body or TEI's (everything under ``inputs``)."""
    return TEISimilarityRequest if "inputs" in data else SimilarityRequest


def decode_shape(data: dict[str, Any]) -> type[_Body]:
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
