"""CoSENTLoss: a ranking loss over all pairs of pairs in the batch (beyond the paper)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from sbert.encoder.model import SentenceEncoder
from sbert.losses.base import SentenceLoss


class CoSENTLoss(SentenceLoss):
    """log(1 + Σ_{gold_i < gold_j} exp(scale · (cos_i − cos_j))).

    Only the order of the gold scores matters, which matches the Spearman evaluation; pairs with equal
    gold scores contribute nothing.

    Under DDP the pairs of pairs span the global batch (every rank's cosines and gold scores,
    gathered with their gradients), as in one process; ``gather_across_ranks = False`` keeps them
    within each process's share.

    Args:
        model: The shared encoder.
        scale: Multiplier of the cosine differences (20, as the CoSENT paper).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data import ScoredPair
        >>> loss = CoSENTLoss(SentenceEncoder.from_pretrained())
        >>> batch = [ScoredPair("A man sleeps.", "A man is asleep.", 5.0),
        ...          ScoredPair("A man sleeps.", "The market fell.", 0.0)]
        >>> float(loss(batch).detach()) < 0.01
        True
    """

    in_batch_negatives = True

    def __init__(self, model: SentenceEncoder, scale: float = 20.0) -> None:
        super().__init__(model)
        self.scale = scale

    def loss(self, examples: Sequence[Any], embeddings: list[Tensor]) -> Tensor:
        u, v = embeddings  # (batch, dim) each
        cosine = self.gather(self.scale * nn.functional.cosine_similarity(u, v, dim=1))  # (batch,)
        gold = self.gather(torch.tensor([float(e.score) for e in examples], device=u.device))  # (batch,)
        differences = cosine[:, None] - cosine[None, :]  # (batch, batch): cos_i − cos_j
        wrong_order = gold[:, None] < gold[None, :]  # gold_i < gold_j: cos_i should be below cos_j
        # The leading zero is the "1 +" inside the log; masked entries drop out of the sum.
        terms = differences.masked_fill(~wrong_order, float("-inf")).flatten()
        return torch.logsumexp(torch.cat([terms.new_zeros(1), terms]), dim=0)
