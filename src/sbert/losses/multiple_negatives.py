"""MultipleNegativesRankingLoss: in-batch negatives (beyond the paper; the standard modern recipe)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from sbert.embeddings.similarity import cosine_matrix
from sbert.encoder.model import SentenceEncoder
from sbert.losses.base import SentenceLoss


class MultipleNegativesRankingLoss(SentenceLoss):
    """Cross-entropy that ranks each anchor's own positive above every other candidate in the batch.

    For anchors a_i and candidates c_j (all positives, then the hard negatives of triplets), the
    logits are ``scale · cos(a_i, c_j)`` and the target of row i is column i. Pairs (sentence1,
    sentence2) give in-batch negatives only; triplets add one hard negative each.

    Under DDP the candidates are those of the global batch (every rank's embeddings, gathered with
    their gradients), so N processes rank against the same negatives as one process would; set
    ``gather_across_ranks = False`` for the cheaper per-process negatives.

    Args:
        model: The shared encoder.
        scale: Inverse temperature of the softmax (20, as sentence-transformers).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data import Triplet
        >>> loss = MultipleNegativesRankingLoss(SentenceEncoder.from_pretrained())
        >>> batch = [Triplet("A man sleeps.", "A man is asleep.", "A man runs."),
        ...          Triplet("A dog barks.", "A dog makes noise.", "A cat is quiet.")]
        >>> float(loss(batch).detach()) < 1.0
        True
    """

    in_batch_negatives = True

    def __init__(self, model: SentenceEncoder, scale: float = 20.0) -> None:
        super().__init__(model)
        self.scale = scale

    def loss(self, examples: Sequence[Any], embeddings: list[Tensor]) -> Tensor:
        anchors, *others = [self.gather(column) for column in embeddings]  # (batch, dim) each
        candidates = torch.cat(others, dim=0)  # (batch · (columns − 1), dim)
        logits = self.scale * cosine_matrix(anchors, candidates)  # (batch, batch · (columns − 1))
        targets = torch.arange(len(anchors), device=logits.device)
        return nn.functional.cross_entropy(logits, targets)
