"""FusedSpladeHead against the modules it fuses (the MLM head over every padded position, then
SpladePooling): equal in float32, within bf16's rounding in bf16, whatever the order and lengths."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

from sbert.modules import SpladePooling
from sbert.sparse import fused_head
from sbert.sparse.fused_head import FusedSpladeHead, fusable


@pytest.fixture(scope="module")
def mlm() -> BertForMaskedLM:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=300, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32)  # fmt: skip
    model = BertForMaskedLM(config).eval()
    with torch.no_grad():
        model.cls.predictions.bias.normal_(-0.5, 0.5)  # both signs: some weights zero, some not
    return model


def modules_pooled(mlm: BertForMaskedLM, hidden: torch.Tensor, lengths: list[int], strategy: str,
                   activation: str) -> torch.Tensor:  # fmt: skip
    """What the modules compute: the head over a padded (batch, longest) layout, then SpladePooling."""
    longest = max(lengths)
    padded = torch.zeros(len(lengths), longest, hidden.shape[1])
    mask = torch.zeros(len(lengths), longest, dtype=torch.long)
    at = 0
    for row, length in enumerate(lengths):
        padded[row, :length], mask[row, :length] = hidden[at : at + length], 1
        at += length
    with torch.inference_mode():
        logits = mlm.cls(padded)  # (batch, longest, vocab)
        return SpladePooling(strategy, activation)(logits, mask)


@pytest.mark.parametrize("strategy", ["max", "sum"])
@pytest.mark.parametrize("activation", ["relu", "log1p_relu"])
def test_float32_equals_the_modules(
    mlm: BertForMaskedLM, monkeypatch: pytest.MonkeyPatch, strategy: str, activation: str
) -> None:
    # Small blocks and chunks: several of each, and a last block narrower than the others.
    monkeypatch.setattr(fused_head, "VOCAB_BLOCK", 64)
    monkeypatch.setattr(fused_head, "CHUNK_TOKENS", 12)
    lengths = [3, 9, 1, 5, 5, 14, 2]  # not sorted: the head sorts and puts back
    hidden = torch.randn(sum(lengths), 16)
    got = FusedSpladeHead(mlm, strategy, activation, torch.float32)(hidden, lengths)
    expected = modules_pooled(mlm, hidden, lengths, strategy, activation)
    assert got.dtype == torch.float32 and got.shape == (len(lengths), 300)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    assert torch.equal(got > 0, expected > 0)


@pytest.mark.parametrize("strategy", ["max", "sum"])
def test_bf16_within_rounding(mlm: BertForMaskedLM, strategy: str) -> None:
    lengths = [4, 7, 2]
    hidden = torch.randn(sum(lengths), 16)
    got = FusedSpladeHead(mlm, strategy, "relu", torch.bfloat16)(hidden, lengths)
    expected = modules_pooled(mlm, hidden, lengths, strategy, "relu")
    cosine = torch.nn.functional.cosine_similarity(got, expected, dim=1)
    assert float((1 - cosine).max()) < 1e-3
    assert float((got - expected).abs().max()) < 0.05 * float(expected.abs().max())


@pytest.mark.parametrize("strategy", ["max", "sum"])
@pytest.mark.parametrize("activation", ["relu", "log1p_relu"])
def test_the_devices_reduction_by_sentence_equals_the_modules(
    mlm: BertForMaskedLM, monkeypatch: pytest.MonkeyPatch, strategy: str, activation: str
) -> None:
    """pool_tokens (the GPU's): flat tokens in any order, each naming its sentence, padding
    (an index past the last sentence) dropped; several vocabulary blocks."""
    monkeypatch.setattr(fused_head, "DEVICE_VOCAB_BLOCK", 64)
    lengths = [3, 9, 1, 5]
    hidden = torch.randn(sum(lengths), 16)
    sentence = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    shuffle = torch.randperm(len(sentence))
    padded = torch.cat([hidden[shuffle], torch.randn(4, 16) * 100])  # large padding: must not count
    index = torch.cat([sentence[shuffle], torch.full((4,), len(lengths))])
    got = FusedSpladeHead(mlm, strategy, activation, torch.float32).pool_tokens(padded, index, len(lengths))
    expected = modules_pooled(mlm, hidden, lengths, strategy, activation)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-6)
    assert torch.equal(got > 0, expected > 0)
    half = FusedSpladeHead(mlm, strategy, activation, torch.float16).pool_tokens(padded, index, len(lengths))
    assert float((1 - torch.nn.functional.cosine_similarity(half, expected, dim=1)).max()) < 1e-3


def test_refuses_what_it_cannot_fuse(mlm: BertForMaskedLM) -> None:
    assert fusable(mlm) and not fusable(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="no BERT-style MLM head"):
        FusedSpladeHead(torch.nn.Linear(2, 2), "max", "relu", torch.float32)
    with pytest.raises(ValueError, match="pooling_strategy"):
        FusedSpladeHead(mlm, "mean", "relu", torch.float32)
    with pytest.raises(ValueError, match="float32, bfloat16 or float16"):
        FusedSpladeHead(mlm, "max", "relu", torch.float64)
    with pytest.raises(ValueError, match="add up to the 3 tokens"):
        FusedSpladeHead(mlm, "max", "relu", torch.float32)(torch.randn(3, 16), [1, 1])
