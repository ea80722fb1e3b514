"""SpladePooling, SparseStaticEmbedding and SparseAutoEncoder against sentence-transformers' modules
(the oracle), on random inputs; each one's folder read and written in sentence-transformers' format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from sentence_transformers.sparse_encoder.modules import SparseAutoEncoder as STSparseAutoEncoder
from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding as STSparseStaticEmbedding
from sentence_transformers.sparse_encoder.modules import SpladePooling as STSpladePooling
from tests.conftest import build_tiny_bert
from transformers import AutoTokenizer

from sbert.modules import SparseAutoEncoder, SparseStaticEmbedding, SpladePooling


def _logits() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 7, 50, generator=generator) * 2  # (batch, seq, vocab)
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5])  # (batch, seq)
    return logits, mask


@pytest.mark.parametrize("strategy", ["max", "sum"])
@pytest.mark.parametrize("activation", ["relu", "log1p_relu"])
@pytest.mark.parametrize("chunk_size", [None, 3])
def test_splade_pooling_equals_sentence_transformers(
    strategy: str, activation: str, chunk_size: int | None
) -> None:
    logits, mask = _logits()
    oracle = STSpladePooling(strategy, activation, chunk_size=chunk_size).eval()
    expected = oracle({"token_embeddings": logits.clone(), "attention_mask": mask})["sentence_embedding"]
    ours = SpladePooling(strategy, activation, chunk_size=chunk_size)
    torch.testing.assert_close(ours(logits.clone(), mask), expected, atol=1e-6, rtol=1e-6)
    assert ours.embedding_dimension == 50


def test_splade_pooling_gradients() -> None:
    logits, mask = _logits()
    logits.requires_grad_(True)
    SpladePooling("sum")(logits, mask).sum().backward()
    assert logits.grad is not None and logits.grad[2, 5:].abs().sum() == 0  # padding gets none


def test_splade_pooling_config(tmp_path: Path) -> None:
    SpladePooling("sum", "log1p_relu", embedding_dimension=50).save(tmp_path)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written == {
        "pooling_strategy": "sum",
        "activation_function": "log1p_relu",
        "embedding_dimension": 50,
    }
    assert STSpladePooling.load(str(tmp_path)).pooling_strategy == "sum"
    with pytest.raises(ValueError, match="pooling_strategy 'mean' is not one of max, sum"):
        SpladePooling("mean")
    with pytest.raises(ValueError, match="chunk_size"):
        SpladePooling(chunk_size=0)


def test_sparse_static_embedding_equals_sentence_transformers(tmp_path: Path) -> None:
    folder = build_tiny_bert(tmp_path / "bert")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    weight = torch.rand(len(tokenizer.get_vocab()), generator=torch.Generator().manual_seed(3))
    oracle = STSparseStaticEmbedding(tokenizer, weight=weight.clone())
    oracle.save(str(tmp_path / "static"))
    ours = SparseStaticEmbedding.load(tmp_path / "static")
    texts = ["the dog and the cat", "rain rain rain", "", "a b"]
    expected = oracle(dict(oracle.preprocess(texts)))["sentence_embedding"]
    got = ours(ours.collate(ours.tokenize(texts).ids))
    torch.testing.assert_close(got, expected.float())
    (tmp_path / "again").mkdir()
    # A text that spells the padding token keeps it, padded or not (sentence-transformers' scatter_
    # lets the padding after it switch it off: its weight would depend on the batch).
    alone, padded = (
        ours(ours.collate(ours.tokenize(batch).ids))[0] for batch in (["[PAD] a"], ["[PAD] a", texts[0]])
    )
    torch.testing.assert_close(alone, padded)
    assert alone[tokenizer.pad_token_id] == weight[tokenizer.pad_token_id]
    ours.save(tmp_path / "again")
    again = STSparseStaticEmbedding.load(str(tmp_path / "again"))
    torch.testing.assert_close(again.weight.detach(), weight)
    assert json.loads((tmp_path / "again" / "config.json").read_text()) == {"frozen": False}


@pytest.mark.parametrize("normalize", [False, True])
def test_sparse_auto_encoder_equals_sentence_transformers(normalize: bool, tmp_path: Path) -> None:
    torch.manual_seed(4)
    oracle = STSparseAutoEncoder(16, hidden_dim=64, k=5, k_aux=8, normalize=normalize)
    with torch.no_grad():
        oracle.encoder.weight.normal_()
        oracle.pre_bias.normal_()
        oracle.latent_bias.normal_()
    oracle.save(str(tmp_path))
    ours = SparseAutoEncoder.load(tmp_path)
    vectors = torch.randn(4, 16)
    for k in (None, 2):
        with torch.inference_mode():
            expected = oracle({"sentence_embedding": vectors.clone()}, max_active_dims=k)[
                "sentence_embedding"
            ]
            torch.testing.assert_close(ours(vectors, k), expected)
    (tmp_path / "again").mkdir()
    ours.save(tmp_path / "again")
    again = STSparseAutoEncoder.load(str(tmp_path / "again"))
    torch.testing.assert_close(again.encoder.weight, oracle.encoder.weight)
    assert again.k == 5 and again.normalize is normalize
