"""FlopsLoss: the FLOPS regulariser of SPLADE (Paria et al., 2020), as sentence-transformers'.

The squared L2 norm of the batch's mean vector, ``sum_j (mean_i w_ij)^2``: a smooth stand-in for the
number of multiplications an inverted index does, which pushes rarely useful dimensions to zero.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn


class FlopsLoss(nn.Module):
    """``forward(embeddings) -> sum((embeddings.mean(0)) ** 2)``, used inside :class:`SpladeLoss`.

    Args:
        model: Unused: sentence-transformers' signature, ``FlopsLoss(model, threshold)``.
        threshold: With a threshold, a vector counts only when it has more than this many non-zero
            dimensions (FLOPS with l0 masking, arXiv 2504.14839): rows at or under it are zeroed
            but still count in the mean, as in sentence-transformers.

    Examples:
        >>> import torch
        >>> FlopsLoss()(torch.tensor([[1.0, 0.0], [3.0, 2.0]])).item()  # means 2 and 1
        5.0
        >>> FlopsLoss(threshold=1)(torch.tensor([[1.0, 0.0], [3.0, 2.0]])).item()  # row 0 masked
        3.25
    """

    def __init__(self, model: Any = None, threshold: float | None = None) -> None:
        super().__init__()
        if threshold is not None and threshold < 0:
            raise ValueError(f"FlopsLoss threshold must be >= 0 or None, got {threshold}")
        self.threshold = threshold

    def forward(self, embeddings: Tensor) -> Tensor:
        # embeddings: (batch, vocab)
        if self.threshold is not None:
            active = (embeddings != 0).sum(dim=1)  # (batch,)
            embeddings = embeddings * (active > self.threshold).to(embeddings.dtype).unsqueeze(1)
        return (embeddings.mean(dim=0) ** 2).sum()

    def compute_loss_from_embeddings(self, embeddings: Tensor) -> Tensor:
        """sentence-transformers' name for :meth:`forward`."""
        return self(embeddings)
