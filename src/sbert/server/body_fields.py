"""The field types the request bodies share (:mod:`sbert.server.openai_schemas`,
:mod:`sbert.server.tei_schemas`): strict models, whole numbers written ``3`` or ``3.0``, one text or a
list of them, token ids the document bounds by the vocabulary."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictStr


def one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def integral(value: Any) -> Any:
    """``1.0`` as ``1``: JSON has one number type, and JSON Schema's ``integer`` takes ``1.0``."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Whole numbers, written ``3`` or ``3.0`` (never ``"3"`` or ``true``: the models stay strict). The
# bound comes before the validator: so pydantic writes it into the document as ``minimum`` (after it,
# as an unknown ``ge`` keyword that no client or fuzzer reads).
PositiveInteger = Annotated[int, Field(ge=1), BeforeValidator(integral)]
TOKEN_ID = "A token id of the model's tokenizer"  # marks the fields the document bounds by the vocabulary
TokenId = Annotated[int, Field(ge=0, description=TOKEN_ID), BeforeValidator(integral)]
TopK = Annotated[int, Field(ge=1, le=1000), BeforeValidator(integral)]


FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32


Texts = Annotated[list[StrictStr], Field(min_length=1)]
# The OpenAPI schema says what a client may send (a string or a list), not what it becomes.
OneOrMoreTexts = Annotated[
    list[StrictStr],
    BeforeValidator(one_or_many, json_schema_input_type=str | list[str]),
    Field(min_length=1),
]


def one_row_or_many(value: Any) -> Any:
    one = isinstance(value, list) and bool(value) and not isinstance(value[0], list)
    return [value] if one else value


TokenIds = Annotated[list[TokenId], Field(min_length=1)]
Direction = Literal["Right", "Left", "right", "left"]  # TEI's truncation_direction


class StrictBody(BaseModel):
    """A request body: no unknown fields, no ``"5"`` for 5."""

    model_config = ConfigDict(extra="forbid", strict=True)
