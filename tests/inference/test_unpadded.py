"""Unpadded BERT against Hugging Face's padded forward pass: the same token and sentence vectors."""

from __future__ import annotations

import pytest
import torch

from sbert import SentenceEncoder
from sbert.inference.cuda.unpadded import UnpaddedBert, padded_tokens, unpadded_batch
from sbert.modules import Pooling

SENTENCES = [
    "a man plays the guitar while the crowd sings along to every single chorus of the song",
    "rain",
    "the dog runs in the park",
    "a small red car and a big blue car",
    "x",
]


def _padded_reference(encoder: SentenceEncoder, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    features = encoder.transformer.collate(ids)
    with torch.inference_mode():
        return encoder.transformer(features), features["attention_mask"]  # (batch, seq, hidden), mask


def test_token_vectors_equal_the_padded_forward_pass(tiny_encoder: SentenceEncoder) -> None:
    ids = tiny_encoder.token_ids(SENTENCES).ids
    expected, mask = _padded_reference(tiny_encoder, ids)
    with torch.inference_mode():
        tokens = UnpaddedBert(tiny_encoder.transformer.model, torch.float32)(unpadded_batch(ids))
    assert tokens.shape == (sum(map(len, ids)), expected.shape[-1])
    torch.testing.assert_close(tokens, expected[mask.bool()], atol=1e-5, rtol=0)


@pytest.mark.parametrize("mode", ["mean", "cls", "max", "weightedmean", "lasttoken"])
def test_pooled_vectors_equal_the_padded_path(tiny_encoder: SentenceEncoder, mode: str) -> None:
    pooling = Pooling(tiny_encoder.transformer.dim, mode)
    ids = tiny_encoder.token_ids(SENTENCES).ids
    expected_tokens, mask = _padded_reference(tiny_encoder, ids)
    batch = unpadded_batch(ids)
    with torch.inference_mode():
        tokens = UnpaddedBert(tiny_encoder.transformer.model, torch.float32)(batch)
        got = pooling(padded_tokens(tokens, batch), batch.token_mask)
        expected = pooling(expected_tokens, mask)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


def test_bfloat16_stays_close_to_float32(tiny_encoder: SentenceEncoder) -> None:
    batch = unpadded_batch(tiny_encoder.token_ids(SENTENCES).ids)
    model = tiny_encoder.transformer.model
    with torch.inference_mode():
        exact = UnpaddedBert(model, torch.float32)(batch)
        low = UnpaddedBert(model, torch.bfloat16)(batch)
    assert low.dtype == torch.float32
    assert torch.nn.functional.cosine_similarity(low, exact, dim=-1).min() > 0.999


def test_a_sentence_without_tokens_is_named() -> None:
    with pytest.raises(ValueError, match="sentence 1 has no tokens"):
        unpadded_batch([[101, 102], []])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_first_token_alone_is_each_sentences_first_token_vector(
    tiny_encoder: SentenceEncoder, dtype: torch.dtype
) -> None:
    """A cross-encoder's classifier reads each sentence's first token: the last layer runs for it alone."""
    batch = unpadded_batch(tiny_encoder.token_ids(SENTENCES).ids)
    bert = UnpaddedBert(tiny_encoder.transformer.model, dtype)
    with torch.inference_mode():
        whole = bert(batch)  # (total, hidden)
        first = bert(batch, first_token=True)  # (batch, 1, hidden)
    assert first.shape == (len(SENTENCES), 1, whole.shape[-1])
    starts = batch.cu_seqlens[:-1].long()
    bound = 1e-5 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(first[:, 0], whole[starts], atol=bound, rtol=0)
