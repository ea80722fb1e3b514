"""text-embeddings-inference's bodies (TEI 1.x), field for field; parsed by
:func:`sbert.server.schemas.parse_body`. Unlike sbert's own routes, TEI refuses an input over the
model's limit unless the body says ``truncate: true``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field, StrictStr

from sbert.server.body_fields import (
    FLOAT32_MAX,
    TOKEN_ID,
    Direction,
    OneOrMoreTexts,
    PositiveInteger,
    StrictBody,
    Texts,
    TokenIds,
    integral,
)


class EmbedRequest(StrictBody):
    """TEI's ``POST /embed``: one vector per input."""

    inputs: OneOrMoreTexts
    normalize: bool = True
    truncate: bool | None = False
    truncation_direction: Direction = "Right"
    prompt_name: StrictStr | None = None
    dimensions: PositiveInteger | None = None


class EmbedAllRequest(StrictBody):
    """TEI's ``POST /embed_all``: every token's vector of each input, no pooling."""

    inputs: OneOrMoreTexts
    truncate: bool | None = False
    truncation_direction: Direction = "Right"
    prompt_name: StrictStr | None = None


class TokenizeRequest(StrictBody):
    """TEI's ``POST /tokenize``: each input's tokens with their character offsets."""

    inputs: OneOrMoreTexts
    add_special_tokens: bool = True
    prompt_name: StrictStr | None = None


class DecodeRequest(StrictBody):
    """TEI's ``POST /decode`` of one list of token ids: ``["text"]``."""

    ids: TokenIds
    skip_special_tokens: bool = True


class DecodeBatchRequest(StrictBody):
    """TEI's ``POST /decode`` of several lists of token ids: a text for each."""

    ids: Annotated[list[TokenIds], Field(min_length=1)]
    skip_special_tokens: bool = True


class EmbedSparseRequest(StrictBody):
    """TEI's ``POST /embed_sparse``: a sparse vector per input (a SPLADE model), as
    ``[{"index", "value"}, ...]``; TEI's ``EmbedSparseRequest`` field for field."""

    inputs: OneOrMoreTexts
    truncate: bool | None = False
    truncation_direction: Direction = "Right"
    prompt_name: StrictStr | None = None


class SparseValue(StrictBody):
    """One non-zero weight of a sparse vector: its vocabulary index and its value (TEI's ``SparseValue``)."""

    index: Annotated[int, Field(ge=0, description=TOKEN_ID), BeforeValidator(integral)]
    value: Annotated[float, Field(ge=-FLOAT32_MAX, le=FLOAT32_MAX)]  # a float32: finite, no NaN


class SparseDecodeRequest(StrictBody):
    """``POST /decode`` of sparse vectors (what ``/embed_sparse`` answers): each vector's tokens
    with their weights, heaviest first, at most ``top_k`` (default: every non-zero one)."""

    inputs: Annotated[list[list[SparseValue]], Field(min_length=1)]
    top_k: PositiveInteger | None = None


class TEIRerankRequest(StrictBody):
    """TEI's ``POST /rerank`` (a body with ``texts``): ``[{"index", "score"[, "text"]}]``, best first."""

    query: StrictStr
    texts: Texts
    raw_scores: bool = False
    return_text: bool = False
    truncate: bool | None = False
    truncation_direction: Direction = "Right"


class SimilarityInput(StrictBody):
    source_sentence: StrictStr
    sentences: Texts


class SimilarityParameters(StrictBody):
    prompt_name: StrictStr | None = None
    truncate: bool | None = False
    truncation_direction: Direction = "Right"


class TEISimilarityRequest(StrictBody):
    """TEI's ``POST /similarity`` (a body with ``inputs``): ``[cosine, ...]``, one per sentence."""

    inputs: SimilarityInput
    parameters: SimilarityParameters | None = None
