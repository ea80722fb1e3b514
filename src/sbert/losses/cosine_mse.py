"""CosineMSELoss: the paper's regression objective, MSE between cos(u, v) and the scaled gold score."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from sbert.encoder.model import SentenceEncoder
from sbert.losses.base import SentenceLoss


class CosineMSELoss(SentenceLoss):
    """Mean squared error between cos(u, v) and the gold score scaled to [0, 1].

    The scaling happens here, in :meth:`targets`: ``(score − low) / (high − low)`` with
    ``score_range=(low, high)``; STSb's 0-5 gold becomes 0-1 as in the paper. Pass the raw scores of
    the data set (unlike sentence-transformers' CosineSimilarityLoss, which wants them pre-scaled).

    Args:
        model: The shared encoder.
        score_range: The range of the gold scores (STSb: 0-5; SICK: 1-5; already scaled: 0-1).

    Raises:
        ValueError: (in ``forward``) a score outside ``score_range``, naming the example's index.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data import ScoredPair
        >>> loss = CosineMSELoss(SentenceEncoder.from_pretrained(), score_range=(0.0, 5.0))
        >>> float(loss([ScoredPair("A man sleeps.", "A man is asleep.", 5.0)]).detach()) < 0.1
        True
    """

    def __init__(self, model: SentenceEncoder, score_range: tuple[float, float] = (0.0, 5.0)) -> None:
        super().__init__(model)
        low, high = score_range
        if not high > low:
            raise ValueError(f"score_range {score_range}: the upper bound must exceed the lower")
        self.score_range = (float(low), float(high))

    def targets(self, examples: Sequence[Any], device: torch.device) -> Tensor:
        """Gold scores scaled to [0, 1], (batch,)."""
        low, high = self.score_range
        scores = []
        for position, example in enumerate(examples):
            if not low <= example.score <= high:
                raise ValueError(
                    f"example {position} of the batch: score {example.score:g} is outside {low:g}-{high:g}"
                )
            scores.append((example.score - low) / (high - low))
        return torch.tensor(scores, dtype=torch.float32, device=device)

    def loss(self, examples: Sequence[Any], embeddings: list[Tensor]) -> Tensor:
        u, v = embeddings  # (batch, dim) each
        cosine = nn.functional.cosine_similarity(u, v, dim=1)  # (batch,)
        return nn.functional.mse_loss(cosine, self.targets(examples, cosine.device))
