"""sentence-transformers 5's Router (a module stack per task), built and saved by sentence-transformers
itself: sbert gives its vectors for encode_query, encode_document and encode, on PyTorch and the
default backend, and sentence-transformers reads back what sbert saves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import (
    Dense,
    Normalize,
    Pooling,
    Router,
    StaticEmbedding,
    Transformer,
)
from tests.conftest import PROMPTS, WORDS, build_tiny_bert
from tokenizers import Tokenizer

from sbert import SentenceEncoder
from sbert.base.errors import ModelLoadError
from sbert.model.router import RouterEncoder

SENTENCES = ["a man plays the guitar", "rain", "", " ".join(WORDS * 3), "the dog runs in the park"]
KINDS = ("static-query", "two-berts")


def st_router(root: Path, kind: str, **options: object) -> SentenceTransformer:
    """A Router model: a tiny BERT for documents, and for queries a static table on its tokenizer
    (sentence-transformers' asymmetric example) or another tiny BERT with another pooling and a Dense
    layer; Normalize after the Router, and query/document prompts."""
    document_dir = build_tiny_bert(root / "document", seed=1)
    document = [Transformer(str(document_dir), max_seq_length=24), Pooling(32, "mean")]
    if kind == "static-query":
        tokenizer = Tokenizer.from_file(str(document_dir / "tokenizer.json"))
        table = torch.randn(tokenizer.get_vocab_size(), 32, generator=torch.Generator().manual_seed(2))
        query: list[torch.nn.Module] = [StaticEmbedding(tokenizer, embedding_weights=table)]
    else:
        query_dir = build_tiny_bert(root / "query", seed=0)
        query = [Transformer(str(query_dir)), Pooling(32, "cls"), Dense(32, 32)]
    router = Router.for_query_document(query_modules=query, document_modules=document, **options)
    return SentenceTransformer(modules=[router, Normalize()], device="cpu", prompts=PROMPTS)


@pytest.fixture(scope="module", params=KINDS)
def st_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp(request.param)
    st_router(root, request.param).save(str(root / "st"))
    return root / "st"


def assert_same_vectors(ours: SentenceEncoder, theirs: SentenceTransformer) -> None:
    for method in ("encode_query", "encode_document", "encode"):
        expected = getattr(theirs, method)(SENTENCES)
        np.testing.assert_allclose(
            getattr(ours, method)(SENTENCES), expected, atol=1e-5, rtol=0, err_msg=method
        )


@pytest.mark.parametrize("backend", ["torch", "auto"])
def test_a_router_model_gives_sentence_transformers_vectors_by_task(st_dir: Path, backend: str) -> None:
    theirs = SentenceTransformer(str(st_dir), device="cpu")
    ours = SentenceEncoder.from_pretrained(st_dir, device="cpu", precision="float32", backend=backend)
    assert isinstance(ours, RouterEncoder)
    assert ours.route_names == ("query", "document") and ours.default_route == "document"
    assert_same_vectors(ours, theirs)
    # The routes differ (else the test could not tell them apart), and task= picks one as in ST.
    assert not np.allclose(ours.encode_query(SENTENCES[:2]), ours.encode_document(SENTENCES[:2]))
    np.testing.assert_allclose(
        ours.encode(SENTENCES, task="query"), theirs.encode(SENTENCES, task="query"), atol=1e-5, rtol=0
    )


def test_sentence_transformers_loads_the_router_sbert_saves(st_dir: Path, tmp_path: Path) -> None:
    ours = SentenceEncoder.from_pretrained(st_dir, device="cpu", precision="float32", backend="torch")
    ours.save(tmp_path / "sbert")
    assert_same_vectors(ours, SentenceTransformer(str(tmp_path / "sbert"), device="cpu"))
    again = SentenceEncoder.from_pretrained(tmp_path / "sbert", device="cpu", precision="float32")
    assert isinstance(again, RouterEncoder) and again.default_route == "document"
    np.testing.assert_allclose(again.encode_query(SENTENCES), ours.encode_query(SENTENCES), atol=1e-5, rtol=0)


def test_an_unknown_task_names_the_routes(st_dir: Path) -> None:
    ours = SentenceEncoder.from_pretrained(st_dir, device="cpu", precision="float32", backend="torch")
    with pytest.raises(ValueError, match=r"no route for task 'passage'.*query, document"):
        ours.encode(SENTENCES, task="passage")
    with pytest.raises(ValueError):  # sentence-transformers refuses it too
        SentenceTransformer(str(st_dir), device="cpu").encode(SENTENCES, task="passage")


def test_without_a_default_route_encode_needs_a_task(tmp_path: Path) -> None:
    theirs = st_router(tmp_path, "two-berts", default_route=None, allow_empty_key=False)
    theirs.save(str(tmp_path / "st"))
    ours = SentenceEncoder.from_pretrained(
        tmp_path / "st", device="cpu", precision="float32", backend="torch"
    )
    with pytest.raises(ValueError, match="no default route: pass task= one of query, document"):
        ours.encode(SENTENCES)
    with pytest.raises(ValueError):
        theirs.encode(SENTENCES)
    np.testing.assert_allclose(
        ours.encode_query(SENTENCES), theirs.encode_query(SENTENCES), atol=1e-5, rtol=0
    )


def test_a_router_config_that_names_a_missing_module_is_refused(st_dir: Path, tmp_path: Path) -> None:
    broken = shutil.copytree(st_dir, tmp_path / "broken")
    config = json.loads((broken / "router_config.json").read_text())
    config["structure"]["query"][0] = "../elsewhere"
    (broken / "router_config.json").write_text(json.dumps(config))
    with pytest.raises(
        ModelLoadError,
        match=r"router_config.json: route 'query' lists '../elsewhere', which is not a module folder",
    ):
        SentenceEncoder.from_pretrained(broken, device="cpu")


def test_set_precision_reaches_every_transformer_route(st_dir: Path) -> None:
    ours = SentenceEncoder.from_pretrained(st_dir, device="cpu", precision="float32", backend="torch")
    ours.set_precision("bfloat16")
    query = ours.route("query")
    assert ours.route("document").requested_precision == "bfloat16"
    assert query.requested_precision == ("float32" if query.is_static else "bfloat16")


def test_routes_of_different_sizes_are_refused(tiny_encoder: SentenceEncoder, tiny_static_dir: Path) -> None:
    static = SentenceEncoder.from_pretrained(tiny_static_dir)  # 8 dimensions, the BERT 32
    with pytest.raises(ValueError, match=r"different sizes \{'query': 8, 'document': 32\}"):
        RouterEncoder({"query": static, "document": tiny_encoder})
    with pytest.raises(ValueError, match=r"default_route 'passage' is not a route \(query\)"):
        RouterEncoder({"query": static}, default_route="passage")
