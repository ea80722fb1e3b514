"""What each endpoint answers, as schemas: the OpenAPI document's answers and errors come from these.

The handlers build their answers as plain dicts and arrays (written by orjson in one call,
:mod:`sbert.server.responses`); running every answer through these models would cost more than the
answer itself. Instead the tests validate real answers against the published schema, so the two
cannot drift apart. ``extra="forbid"``: a field the schema does not name fails that test.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from sbert.server.errors import TEIErrorType


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorDetail(_Answer):
    message: str = Field(description="What was wrong, starting with the field and item: `input[3]: ...`")
    type: str = Field(description="`invalid_request_error`, `not_found_error`, `rate_limit_error`, ...")
    param: str | None = Field(description="The field and item, `input[3]`, or `body`")
    code: str | None = Field(description="A machine-readable reason where there is one (`input_too_long`)")


class ErrorBody(_Answer):
    """Every error of sbert's and OpenAI's routes, whatever its status (OpenAI's shape)."""

    error: ErrorDetail


class TEIErrorBody(_Answer):
    """Every error of TEI's routes (text-embeddings-inference's ``ErrorResponse``)."""

    error: str = Field(description="What was wrong, starting with the field and item: `inputs[3]: ...`")
    error_type: TEIErrorType = Field(
        description="TEI's `ErrorType`: `Validation` (422, or 413 for a body over the byte limit), "
        "`Empty` (400), `Overloaded` (429), `Unhealthy` (503), `Backend` (424: the model failed)"
    )


class Usage(_Answer):
    prompt_tokens: int = Field(ge=0, description="Tokens the model read, special tokens included")
    total_tokens: int = Field(ge=0)


class Truncated(_Answer):
    param: str = Field(description="The input cut to the model's limit: `input[3]`")
    tokens: int = Field(ge=0, description="Its tokens before the cut")


class _Embedded(_Answer):
    model: str
    usage: Usage
    truncated: list[Truncated] = Field(description="The inputs cut to the model's limit (empty: none)")


class EmbeddingItem(_Answer):
    object: Literal["embedding"]
    index: int = Field(ge=0)
    embedding: list[float] | str = Field(
        description="Numbers (float32 written exactly), or base64 of little-endian float32"
    )


class EmbeddingResponse(_Embedded):
    """OpenAI's embeddings answer, plus ``truncated``."""

    object: Literal["list"]
    data: list[EmbeddingItem]


class SimilarityResponse(_Embedded):
    scores: list[float] = Field(description="Cosine of each sentence to `source_sentence`, in order")


class SearchHit(_Answer):
    corpus_id: int
    score: float
    text: str | None = Field(description="The indexed text (null: the index keeps none)")


class SearchResponse(_Embedded):
    results: list[SearchHit] = Field(description="Best first")


class RerankDocument(_Answer):
    text: str


class RerankResult(_Answer):
    index: int = Field(ge=0, description="The document's position in `documents`")
    relevance_score: float
    document: RerankDocument | None = Field(None, description="Present with `return_documents`")


class RerankResponse(_Answer):
    """Cohere's and Jina's rerank answer; ``usage`` and ``truncated`` with the bi-encoder."""

    results: list[RerankResult] = Field(description="Best first, ties in input order")
    model: str
    scorer: Literal["bi-encoder", "cross-encoder"]
    usage: Usage | None = None
    truncated: list[Truncated] | None = None


ModelKind = Literal["dense", "sparse", "cross-encoder"]
KIND = "What the model gives: `dense` vectors (/v1/embeddings, /embed), `sparse` ones (/embed_sparse), or scores (`cross-encoder`, /rerank)"


class Serving(_Answer):
    device: str = Field(description="`cpu`, `cuda:0`, ...")
    precision: str
    backend: str
    runner: Literal["cuda-pipeline", "torch", "openvino", "openvino-packed", "static"] = Field(
        description="What runs the batches: `cuda-pipeline` is the GPU pipeline"
    )
    max_batch_tokens: int = Field(description="Most tokens of one batch handed to the runner")
    batch_tokens: Literal["real", "padded"] = Field(
        description="What those tokens count: real ones, or sentences × longest"
    )
    cuda_graphs: bool = Field(description="Whether small batches replay CUDA graphs")


class Health(_Answer):
    """The default (first) model's details, and every served model's name."""

    status: Literal["ok"]
    model: str
    dimension: int
    max_input_tokens: int
    precision: str
    backend: str
    engine: dict[str, Any] = Field(description="What encode() runs: backend, precision, graph, ...")
    packed_batches: bool = Field(description="Whether merged batches run as packed rows")
    serving: Serving = Field(description="Where the batches run and how they are cut")
    index: str | None
    cross_encoder: str | None
    queued_items: int = Field(description="Sentences waiting, all models together")
    models: list[str] = Field(description="The served models' names; the first is the default")
    kind: ModelKind = Field(description=KIND)


class ModelCard(_Answer):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    kind: ModelKind = Field(description=KIND)


class ModelList(_Answer):
    object: Literal["list"]
    data: list[ModelCard]


class Metrics(RootModel[str]):
    """Prometheus' text exposition format."""


# text-embeddings-inference's answers (TEI 1.x), field for field.
class EmbedResponse(RootModel[list[list[float]]]):
    """TEI's ``/embed``: a vector per input."""


class EmbedAllResponse(RootModel[list[list[list[float]]]]):
    """TEI's ``/embed_all``: for each input, a vector per token, special tokens included."""


class SimpleToken(_Answer):
    id: int = Field(ge=0)
    text: str = Field(description="The input's characters start:stop, or the special token itself")
    special: bool
    start: int | None = Field(description="Character offset in the input (null: a special token)")
    stop: int | None


class TokenizeResponse(RootModel[list[list[SimpleToken]]]):
    """TEI's ``/tokenize``: each input's tokens."""


class DecodeResponse(RootModel[list[str]]):
    """TEI's ``/decode``: a text per list of ids."""


class SparseWeight(_Answer):
    index: int = Field(ge=0, description="The vocabulary index (a token id of the model's tokenizer)")
    value: float = Field(description="Its weight (float32 written exactly)")


class EmbedSparseResponse(RootModel[list[list[SparseWeight]]]):
    """TEI's ``/embed_sparse``: for each input, its non-zero weights in index order."""


class TokenWeight(_Answer):
    token: str = Field(description="The vocabulary entry (a WordPiece piece: `##s`)")
    value: float


class SparseDecodeResponse(RootModel[list[list[TokenWeight]]]):
    """``/decode`` of sparse vectors: each vector's tokens, heaviest first."""


class Rank(_Answer):
    index: int = Field(ge=0, description="The text's position in `texts`")
    score: float
    text: str | None = Field(None, description="Present with `return_text`")


class TEIRerankResponse(RootModel[list[Rank]]):
    """TEI's ``/rerank``: best first."""


class SimilarityScores(RootModel[list[float]]):
    """TEI's ``/similarity``: the cosine of each sentence to the source sentence."""


class EmbeddingModelType(_Answer):
    pooling: str


class ModelType(_Answer):
    embedding: EmbeddingModelType


class Info(_Answer):
    """TEI's ``/info``."""

    model_id: str
    model_sha: str | None
    model_dtype: str
    model_type: ModelType
    max_concurrent_requests: int
    max_input_length: int
    max_batch_tokens: int
    max_batch_requests: int | None
    max_client_batch_size: int
    auto_truncate: bool
    tokenization_workers: int
    version: str
    sha: str | None
    docker_label: str | None
