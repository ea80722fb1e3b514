"""Inference-free SPLADE (a Router: a static query side, an MLM document side) and CSR (a top-k
autoencoder on a dense model) against sentence-transformers' SparseEncoder, loaded and saved both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sentence_transformers import SparseEncoder as STSparseEncoder
from tests.sparse.conftest import SENTENCES, assert_same_vectors

from sbert import SparseEncoder
from sbert.embeddings.identity import model_identity


@pytest.fixture(scope="module")
def router(router_dir: Path) -> SparseEncoder:
    return SparseEncoder.from_pretrained(router_dir, device="cpu")


@pytest.fixture(scope="module")
def router_oracle(router_dir: Path) -> STSparseEncoder:
    return STSparseEncoder(str(router_dir), device="cpu")


def test_inference_free_routes(router: SparseEncoder, router_oracle: STSparseEncoder) -> None:
    assert router.route_names == ("query", "document") and router.default_route == "document"
    assert router.route("query").is_static and not router.is_static
    assert_same_vectors(router.encode_query(SENTENCES), router_oracle.encode_query(SENTENCES))
    assert_same_vectors(router.encode_document(SENTENCES), router_oracle.encode_document(SENTENCES))
    assert_same_vectors(router.encode(SENTENCES), router_oracle.encode(SENTENCES))
    k = 2
    assert_same_vectors(
        router.encode_query(SENTENCES, max_active_dims=k),
        router_oracle.encode_query(SENTENCES, max_active_dims=k),
    )
    assert model_identity(router).pipeline["pooling"] == "query:static,document:splade_max"


def test_inference_free_saved_by_sbert(router: SparseEncoder, tmp_path: Path) -> None:
    router.save(tmp_path / "model")
    config = json.loads((tmp_path / "model" / "router_config.json").read_text())
    assert config["structure"] == {
        "query": ["query_0_SparseStaticEmbedding"],
        "document": ["document_0_Transformer", "document_1_SpladePooling"],
    }
    oracle = STSparseEncoder(str(tmp_path / "model"), device="cpu")
    assert_same_vectors(router.encode_query(SENTENCES), oracle.encode_query(SENTENCES))
    assert_same_vectors(router.encode_document(SENTENCES), oracle.encode_document(SENTENCES))
    again = SparseEncoder.from_pretrained(tmp_path / "model", device="cpu")
    assert_same_vectors(again.encode_query(SENTENCES), router.encode_query(SENTENCES))


def test_csr(csr_dir: Path, tmp_path: Path) -> None:
    model = SparseEncoder.from_pretrained(csr_dir, device="cpu")
    oracle = STSparseEncoder(str(csr_dir), device="cpu")
    assert model.max_active_dims == oracle.max_active_dims == 16 and model.dim == 128
    assert_same_vectors(model.encode(SENTENCES), oracle.encode(SENTENCES))
    assert_same_vectors(
        model.encode(SENTENCES, max_active_dims=4), oracle.encode(SENTENCES, max_active_dims=4)
    )
    assert model.pooling_mode == "mean+sae"
    model.save(tmp_path / "model")
    saved = STSparseEncoder(str(tmp_path / "model"), device="cpu")
    assert_same_vectors(model.encode(SENTENCES), saved.encode(SENTENCES))


def test_is_sparse_folder(
    router_dir: Path, csr_dir: Path, tiny_mlm_dir: Path, tiny_model_dir: Path, tmp_path: Path
) -> None:
    from sbert.sparse.format import is_sparse_folder

    assert is_sparse_folder(router_dir) and is_sparse_folder(csr_dir)
    assert not is_sparse_folder(tiny_mlm_dir) and not is_sparse_folder(
        tiny_model_dir
    )  # plain folders say nothing
    SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu").save(tmp_path / "m")
    (tmp_path / "m" / "config_sentence_transformers.json").unlink()
    assert is_sparse_folder(
        tmp_path / "m"
    )  # the fill-mask Transformer's type says nothing: SpladePooling does
