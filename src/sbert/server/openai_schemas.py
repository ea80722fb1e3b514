"""sbert's own routes' bodies: OpenAI's ``/v1/embeddings`` (texts or token ids), ``/similarity``,
``/search``, and Cohere's, Jina's and infinity's ``/rerank``; parsed by :func:`sbert.server.schemas.parse_body`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StrictStr

from sbert.server.body_fields import (
    OneOrMoreTexts,
    PositiveInteger,
    StrictBody,
    Texts,
    TokenIds,
    TopK,
    one_row_or_many,
)


class EmbeddingRequest(StrictBody):
    """OpenAI's ``POST /v1/embeddings`` body, plus ``truncate`` and ``prompt_name`` (default: the
    model's default prompt)."""

    input: OneOrMoreTexts
    model: StrictStr | None = None
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: PositiveInteger | None = None
    user: StrictStr | None = None
    truncate: bool = True
    prompt_name: StrictStr | None = None


class EmbeddingIdsRequest(EmbeddingRequest):
    """OpenAI's ``POST /v1/embeddings`` body with token ids for ``input`` (one list, or a list of
    lists): each list is one input's tokens as the model's tokenizer gives them for the text,
    without special tokens; the model adds its own (BERT's ``[CLS]`` and ``[SEP]``) as for text."""

    input: Annotated[  # type: ignore[assignment]
        list[TokenIds],
        BeforeValidator(one_row_or_many, json_schema_input_type=TokenIds | list[TokenIds]),
        Field(min_length=1),
    ]


class SimilarityRequest(StrictBody):
    """``POST /similarity``: cosine similarity of one sentence to each of a list."""

    source_sentence: StrictStr
    sentences: Texts
    model: StrictStr | None = None
    truncate: bool = True
    prompt_name: StrictStr | None = None


class SearchRequest(StrictBody):
    """``POST /search``: the ``top_k`` nearest texts of the loaded index."""

    query: StrictStr
    top_k: TopK = 10
    model: StrictStr | None = None
    truncate: bool = True
    prompt_name: StrictStr | None = None  # default: the model's query prompt


class Document(StrictBody):
    """A document as Cohere's and infinity's rerank take it: ``{"text": ...}``."""

    text: StrictStr


def _texts_of(value: Any) -> Any:
    """``{"text": ...}`` documents as their text (anything else is left for the schema to refuse)."""
    if not isinstance(value, list):
        return value
    return [item["text"] if isinstance(item, dict) and set(item) == {"text"} else item for item in value]


class RerankRequest(StrictBody):
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
