"""GradCache MNRL gives plain MNRL's gradients; MatryoshkaLoss sums a loss over prefixes of the vectors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sbert import SentenceEncoder
from sbert.data import NegativesTuple, Triplet
from sbert.losses import (
    CachedMultipleNegativesRankingLoss,
    CoSENTLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
    SoftmaxLoss,
)

BATCH = [
    Triplet("a man plays the guitar", "a man is playing music", "a dog runs in the park"),
    Triplet("the cat sleeps in the sun", "a cat is sleeping", "the woman cooks food"),
    Triplet("rain in the street", "the street is wet", "a big blue rocket"),
    Triplet("a child is eating food", "the child eats", "code and test"),
    Triplet("a red car", "a small red car", "the piano music is happy"),
]


# Two hard negatives a row, as sbert mine-negatives writes them (anchor, positive, negative_1, negative_2).
TUPLES = [
    NegativesTuple(t.anchor, t.positive, (t.negative, BATCH[i - 1].positive)) for i, t in enumerate(BATCH)
]


def gradients(
    loss: torch.nn.Module, model: SentenceEncoder, seed: int = 0, batch: list | None = None
) -> tuple[float, dict[str, torch.Tensor]]:
    model.zero_grad()
    torch.manual_seed(seed)
    value = loss(batch or BATCH)
    value.backward()
    return float(value.detach()), {
        n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None
    }


@pytest.mark.parametrize(("mini_batch_size", "batch"), [(1, BATCH), (4, BATCH), (15, BATCH), (4, TUPLES)])
def test_cached_mnrl_gives_plain_mnrl_gradients(
    tiny_model_dir: Path, mini_batch_size: int, batch: list
) -> None:
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu").eval()  # no dropout: passes agree
    plain_value, plain = gradients(MultipleNegativesRankingLoss(model), model, batch=batch)
    cached_value, cached = gradients(
        CachedMultipleNegativesRankingLoss(model, mini_batch_size=mini_batch_size), model, batch=batch
    )
    assert cached_value == pytest.approx(plain_value, abs=1e-6)
    assert plain.keys() == cached.keys() and len(plain) > 10
    for name in plain:
        torch.testing.assert_close(cached[name], plain[name], atol=1e-5, rtol=1e-4, msg=name)


def test_cached_mnrl_replays_the_dropout_of_its_first_pass(tiny_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu").train()  # dropout on
    # One mini-batch holds the whole batch: the same random state as plain MNRL's one forward pass.
    _, plain = gradients(MultipleNegativesRankingLoss(model), model, seed=3)
    _, cached = gradients(
        CachedMultipleNegativesRankingLoss(model, mini_batch_size=len(BATCH) * 3), model, seed=3
    )
    for name in plain:
        torch.testing.assert_close(cached[name], plain[name], atol=1e-5, rtol=1e-4, msg=name)


def test_matryoshka_is_the_weighted_sum_of_the_loss_on_each_prefix(tiny_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu").eval()
    inner = CoSENTLoss(model)
    from sbert.data import ScoredPair

    pairs = [
        ScoredPair("a man plays", "a man is playing", 0.9),
        ScoredPair("rain", "a red car", 0.1),
        ScoredPair("the cat", "a cat sleeps", 0.7),
    ]
    loss = MatryoshkaLoss(inner, dimensions=(32, 16, 8), weights=(1.0, 0.5, 0.25))
    columns = inner.embed_columns(pairs)
    expected = sum(
        w * inner.loss(pairs, [c[:, :d] for c in columns]) for d, w in zip((32, 16, 8), (1.0, 0.5, 0.25))
    )
    assert float(loss(pairs).detach()) == pytest.approx(float(expected.detach()), rel=1e-6)
    assert MatryoshkaLoss(MultipleNegativesRankingLoss(model)).dimensions == (32,)  # defaults that fit


def test_matryoshka_refuses_what_cannot_work(tiny_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu")
    with pytest.raises(ValueError, match="between 1 and the model's 32, got \\[64, 16\\]"):
        MatryoshkaLoss(MultipleNegativesRankingLoss(model), dimensions=(64, 16))
    with pytest.raises(ValueError, match="2 weights for 3 dimensions"):
        MatryoshkaLoss(MultipleNegativesRankingLoss(model), dimensions=(32, 16, 8), weights=(1, 1))
    with pytest.raises(ValueError, match="cannot wrap SoftmaxLoss"):
        MatryoshkaLoss(SoftmaxLoss(model, ["entailment", "neutral", "contradiction"]))
