"""The model base every kind shares (sbert.model): one device, save and placement; one table of kinds; one encode request."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.sparse.conftest import build_tiny_mlm, save_st_splade

from sbert import CrossEncoder, SentenceEncoder, SparseEncoder
from sbert.model.base import ModelBase
from sbert.model.encoding import EncodeRequest
from sbert.model.kinds import KINDS, folder_kind
from sbert.model.router import RouterEncoder

KIND_CLASSES = (SentenceEncoder, SparseEncoder, CrossEncoder)
SHARED = ("device", "tokenizer", "save", "save_pretrained", "placed", "move_for_encode")


def test_every_kind_is_a_model_base_and_keeps_no_copy_of_its_parts() -> None:
    for kind in KIND_CLASSES:
        assert issubclass(kind, ModelBase), kind
        redefined = [
            name
            for name in SHARED
            if any(name in vars(cls) for cls in kind.__mro__[: kind.__mro__.index(ModelBase)])
        ]
        assert redefined in ([], ["tokenizer"] if kind is CrossEncoder else []), (kind, redefined)


def test_one_table_tells_each_folder_kind(
    tiny_model_dir: Path, tiny_static_dir: Path, tmp_path: Path
) -> None:
    mlm = build_tiny_mlm(tmp_path / "mlm")
    splade = save_st_splade(mlm, tmp_path / "splade")
    CrossEncoder(tiny_model_dir, num_labels=1, device="cpu").save(tmp_path / "cross")
    found = {
        "dense": folder_kind(tiny_model_dir),
        "static": folder_kind(tiny_static_dir),
        "sparse": folder_kind(splade),
        "cross-encoder": folder_kind(tmp_path / "cross"),
        "a plain *ForMaskedLM (BERT itself is one)": folder_kind(mlm),
    }
    assert {what: kind.name for what, kind in found.items()} == {
        "dense": "dense",
        "static": "static",
        "sparse": "sparse",
        "cross-encoder": "cross-encoder",
        "a plain *ForMaskedLM (BERT itself is one)": "dense",
    }
    assert (
        KINDS["sparse"].hint() == "it makes sparse vectors: load it with sbert.SparseEncoder.from_pretrained"
    )
    with pytest.raises(
        OSError, match=r"config_sentence_transformers.json: model_type is SparseEncoder: .*SparseEncoder"
    ):
        SentenceEncoder.from_pretrained(splade, device="cpu")


def test_max_seq_length_reaches_every_route_of_a_dense_router(tiny_model_dir: Path) -> None:
    """As a sparse Router model's always has: the base's one setter cuts every route."""
    query, document = (SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu") for _ in range(2))
    model = RouterEncoder({"query": query, "document": document}, default_route="document")
    model.max_seq_length = 7
    assert [stack.max_seq_length for stack in model.stacks()] == [7, 7]
    with pytest.raises(ValueError, match="max_seq_length"):
        model.max_seq_length = 0


def test_the_encode_request_is_parsed_once_and_frozen(tiny_encoder: SentenceEncoder) -> None:
    tiny_encoder.prompts = tiny_encoder.prompts.__class__({"query": "query: "})
    request = EncodeRequest.of(tiny_encoder, "rain", prompt_name="query")
    assert (request.texts, request.single, request.show_progress_bar) == (["query: rain"], True, False)
    assert request.prompt_length == tiny_encoder.input_module.prompt_length("query: ")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.batch_size = 2  # type: ignore[misc]
    with pytest.raises(ValueError, match="batch_size"):
        EncodeRequest.of(tiny_encoder, ["rain"], batch_size=0)
    with pytest.raises(ValueError, match="pool"):
        EncodeRequest.of(tiny_encoder, ["rain"], pool=object())
