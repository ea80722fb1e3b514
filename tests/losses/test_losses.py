"""Loss values computed by hand on fixed embeddings, and one optimiser step on a toy batch."""

from __future__ import annotations

import math

import pytest
import torch

from sbert import SentenceEncoder
from sbert.data import LabeledPair, NegativesTuple, ScoredPair, Triplet
from sbert.losses import (
    CoSENTLoss,
    CosineMSELoss,
    MultipleNegativesRankingLoss,
    SoftmaxLoss,
    TripletLoss,
)
from sbert.modules.normalize import Normalize


def vectors(*rows: list[float]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32)


def test_cosine_mse_scales_gold_to_unit_range_by_hand(trainable_encoder: SentenceEncoder) -> None:
    loss = CosineMSELoss(trainable_encoder, score_range=(0.0, 5.0))
    u, v = vectors([1.0, 0.0], [1.0, 0.0]), vectors([1.0, 0.0], [0.0, 1.0])  # cosines 1 and 0
    batch = [ScoredPair("a", "b", 2.5), ScoredPair("c", "d", 5.0)]  # scaled gold 0.5 and 1.0
    assert float(loss.loss(batch, [u, v])) == pytest.approx(((1 - 0.5) ** 2 + (0 - 1.0) ** 2) / 2)


def test_cosine_mse_rejects_score_out_of_range_naming_the_index(trainable_encoder: SentenceEncoder) -> None:
    loss = CosineMSELoss(trainable_encoder, score_range=(0.0, 5.0))
    with pytest.raises(ValueError, match="example 1 .* 6 is outside 0-5"):
        loss([ScoredPair("a man", "a dog", 1.0), ScoredPair("a cat", "a car", 6.0)])


def test_softmax_loss_concatenates_u_v_absdiff_by_hand(trainable_encoder: SentenceEncoder) -> None:
    loss = SoftmaxLoss(trainable_encoder, labels=("yes", "no"), concatenation=("u", "v", "|u-v|", "u*v"))
    u, v = vectors([1.0, -2.0]), vectors([3.0, 5.0])
    assert loss.features(u, v).tolist() == [[1.0, -2.0, 3.0, 5.0, 2.0, 7.0, 3.0, -10.0]]
    loss.classifier = torch.nn.Linear(8, 2)
    with torch.no_grad():
        loss.classifier.weight.zero_()
        loss.classifier.bias.copy_(torch.tensor([math.log(3.0), 0.0]))  # p(yes) = 3/4
    value = loss.loss([LabeledPair("a", "b", "no")], [u, v]).detach()
    assert float(value) == pytest.approx(-math.log(1 / 4))


def test_softmax_loss_sees_vectors_before_normalize_and_others_after(
    trainable_encoder: SentenceEncoder,
) -> None:
    model = SentenceEncoder(trainable_encoder.transformer, trainable_encoder.pooling, [Normalize()])
    pairs = [LabeledPair("a man plays", "a dog runs", "neutral")]
    classify = SoftmaxLoss(model).embed_columns(pairs)[0]
    regress = CosineMSELoss(model).embed_columns(pairs)[0]
    assert torch.linalg.norm(regress, dim=1).tolist() == pytest.approx([1.0])
    assert torch.linalg.norm(classify, dim=1).item() != pytest.approx(1.0)
    assert torch.allclose(torch.nn.functional.normalize(classify, dim=1), regress, atol=1e-6)


def test_softmax_loss_default_is_the_papers_3n_by_k(trainable_encoder: SentenceEncoder) -> None:
    loss = SoftmaxLoss(trainable_encoder)
    assert loss.classifier.weight.shape == (3, 3 * trainable_encoder.dim)
    with pytest.raises(ValueError, match="example 0 .* 'maybe'"):
        loss([LabeledPair("a man", "a dog", "maybe")])
    with pytest.raises(ValueError, match="choose parts"):
        SoftmaxLoss(trainable_encoder, concatenation=("u", "u+v"))


def test_triplet_loss_direction_is_pinned(trainable_encoder: SentenceEncoder) -> None:
    """max(‖a−p‖ − ‖a−n‖ + ε, 0): zero when the positive is near, large when the negative is near."""
    loss = TripletLoss(trainable_encoder)  # Euclidean, margin 1
    anchor, near, far = vectors([0.0, 0.0]), vectors([0.0, 1.0]), vectors([3.0, 4.0])  # distances 1, 5
    assert float(loss.loss([], [anchor, near, far])) == 0.0  # 1 − 5 + 1 < 0
    assert float(loss.loss([], [anchor, far, near])) == pytest.approx(5 - 1 + 1)  # positive far: penalised


def test_triplet_loss_manhattan_and_cosine_by_hand(trainable_encoder: SentenceEncoder) -> None:
    anchor, positive, negative = vectors([0.0, 0.0]), vectors([3.0, 4.0]), vectors([1.0, 1.0])
    manhattan = TripletLoss(trainable_encoder, distance="manhattan", margin=0.5)
    assert float(manhattan.loss([], [anchor, positive, negative])) == pytest.approx(7 - 2 + 0.5)
    cosine = TripletLoss(trainable_encoder, distance="cosine", margin=0.1)
    a, p, n = vectors([1.0, 0.0]), vectors([0.0, 1.0]), vectors([1.0, 0.0])  # cosine distances 1 and 0
    assert float(cosine.loss([], [a, p, n])) == pytest.approx(1 - 0 + 0.1)


def test_multiple_negatives_ranking_loss_by_hand(trainable_encoder: SentenceEncoder) -> None:
    loss = MultipleNegativesRankingLoss(trainable_encoder, scale=20.0)
    anchors = vectors([1.0, 0.0], [0.0, 1.0])
    positives = vectors([1.0, 0.0], [1.0, 0.0])  # row 1's positive is orthogonal to it
    # Row 0 logits (20, 20): −log(1/2); row 1 logits (0, 0): −log(1/2).
    assert float(loss.loss([], [anchors, positives])) == pytest.approx(math.log(2))
    negatives = vectors([0.0, 1.0], [0.0, -1.0])  # a hard negative for each anchor
    # Row 0 logits (20, 20, 0, 0); row 1 logits (0, 0, 20, −20): the target is column 1.
    row0 = -math.log(math.exp(20) / (2 * math.exp(20) + 2))
    row1 = -math.log(1 / (2 + math.exp(20) + math.exp(-20)))
    assert float(loss.loss([], [anchors, positives, negatives])) == pytest.approx((row0 + row1) / 2, rel=1e-5)


def test_multiple_negatives_ranking_loss_takes_every_negative_of_a_tuple(
    trainable_encoder: SentenceEncoder,
) -> None:
    loss = MultipleNegativesRankingLoss(trainable_encoder)
    batch = [
        NegativesTuple("a man eats", "a man eats food", ("a dog runs", "the sun")),
        NegativesTuple("a cat", "a small cat", ("a red car", "rain")),
    ]
    columns = [
        torch.tensor(trainable_encoder.encode([e.anchor for e in batch], normalize=True)),
        torch.tensor(trainable_encoder.encode([e.positive for e in batch], normalize=True)),
        *(
            torch.tensor(trainable_encoder.encode([e.negatives[k] for e in batch], normalize=True))
            for k in (0, 1)
        ),
    ]
    trainable_encoder.eval()
    with torch.no_grad():
        value = float(loss(batch))
    assert value == pytest.approx(float(loss.loss(batch, columns)), rel=1e-4)
    fewer = float(loss.loss(batch, columns[:3]))
    assert value > fewer  # a second negative per row adds candidates


def test_cosent_loss_by_hand(trainable_encoder: SentenceEncoder) -> None:
    loss = CoSENTLoss(trainable_encoder, scale=20.0)
    u = vectors([1.0, 0.0], [1.0, 0.0], [1.0, 0.0])
    v = vectors([1.0, 0.0], [0.0, 1.0], [0.0, 1.0])  # cosines 1, 0, 0
    batch = [ScoredPair("a", "b", 1.0), ScoredPair("c", "d", 4.0), ScoredPair("e", "f", 4.0)]
    # Gold says pairs 1 and 2 should score above pair 0: two terms exp(20 · (1 − 0)); ties add nothing.
    expected = math.log(1 + 2 * math.exp(20))
    assert float(loss.loss(batch, [u, v])) == pytest.approx(expected, rel=1e-6)


def test_every_column_goes_through_the_one_shared_encoder(trainable_encoder: SentenceEncoder) -> None:
    loss = TripletLoss(trainable_encoder)
    assert loss.model is trainable_encoder
    a, p, n = loss.embed_columns([Triplet("a man", "a man", "a man")])
    assert torch.allclose(a, p) and torch.allclose(a, n)  # same text, same weights: same vector


TOY_BATCHES = {
    "cosine-mse": (
        lambda m: CosineMSELoss(m),
        [ScoredPair("a man plays guitar", "a man plays music", 5.0), ScoredPair("a cat", "the rocket", 0.0)],
    ),
    "cosent": (
        lambda m: CoSENTLoss(m),
        [ScoredPair("a man plays guitar", "a man plays music", 5.0), ScoredPair("a cat", "the rocket", 0.0)],
    ),
    "softmax": (
        lambda m: SoftmaxLoss(m),
        [
            LabeledPair("a man runs", "a man is running", "entailment"),
            LabeledPair("a dog", "a cat", "neutral"),
        ],
    ),
    "triplet": (lambda m: TripletLoss(m), [Triplet("a man runs", "a man is running", "the red car")]),
    "mnrl": (
        lambda m: MultipleNegativesRankingLoss(m),
        [Triplet("a man runs", "a man is running", "a sad cat"), Triplet("the sun", "the rain", "a bug")],
    ),
}


@pytest.mark.parametrize("name", TOY_BATCHES)
def test_one_optimiser_step_lowers_the_loss(name: str, trainable_encoder: SentenceEncoder) -> None:
    build, batch = TOY_BATCHES[name]
    torch.manual_seed(0)
    loss = build(trainable_encoder)
    loss.eval()  # no dropout, so the two evaluations see the same network but for the step
    optimizer = torch.optim.SGD(loss.parameters(), lr=1e-2)
    before = loss(batch)
    before.backward()
    optimizer.step()
    with torch.no_grad():
        after = loss(batch)
    assert float(after) < float(before.detach())
