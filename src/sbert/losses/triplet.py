"""TripletLoss: the paper's triplet objective, max(‖a−p‖ − ‖a−n‖ + ε, 0)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torch import Tensor, nn

from sbert.base.options import TRIPLET_DISTANCES, choice
from sbert.encoder.model import SentenceEncoder
from sbert.losses.base import SentenceLoss


def euclidean_distance(a: Tensor, b: Tensor) -> Tensor:
    """‖a − b‖₂ row by row, (batch,)."""
    return (a - b).norm(p=2, dim=1)


def manhattan_distance(a: Tensor, b: Tensor) -> Tensor:
    """‖a − b‖₁ row by row, (batch,)."""
    return (a - b).abs().sum(dim=1)


def cosine_distance(a: Tensor, b: Tensor) -> Tensor:
    """1 − cos(a, b) row by row, (batch,)."""
    return 1 - nn.functional.cosine_similarity(a, b, dim=1)


DISTANCE_FUNCTIONS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "euclidean": euclidean_distance,
    "manhattan": manhattan_distance,
    "cosine": cosine_distance,
}


class TripletLoss(SentenceLoss):
    """Push the anchor closer to the positive than to the negative by at least ``margin``.

    loss = mean(max(d(a, p) − d(a, n) + ε, 0)): zero once the negative is ε farther than the positive,
    and growing as the positive moves away from the anchor.

    Args:
        model: The shared encoder.
        distance: ``euclidean`` (the paper's), ``manhattan`` or ``cosine`` (1 − cos).
        margin: ε; the paper uses 1 with Euclidean distance.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data import Triplet
        >>> loss = TripletLoss(SentenceEncoder.from_pretrained())
        >>> float(loss([Triplet("A man sleeps.", "A man is asleep.", "A man is running.")]).detach()) >= 0
        True
    """

    def __init__(self, model: SentenceEncoder, distance: str = "euclidean", margin: float = 1.0) -> None:
        super().__init__(model)
        self.distance_name = choice(distance, TRIPLET_DISTANCES, "distance")
        self.distance = DISTANCE_FUNCTIONS[self.distance_name]
        self.margin = margin

    def loss(self, examples: Sequence[Any], embeddings: list[Tensor]) -> Tensor:
        anchor, positive, negative = embeddings  # (batch, dim) each
        violation = self.distance(anchor, positive) - self.distance(anchor, negative) + self.margin
        return nn.functional.relu(violation).mean()
