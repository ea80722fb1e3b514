"""Normalize: scale each sentence vector to unit length, so that dot product equals cosine."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from sbert.modules.module import Module


class Normalize(Module):
    """L2-normalise sentence vectors, as sentence-transformers' ``Normalize`` module does.

    Examples:
        >>> import torch
        >>> Normalize()(torch.tensor([[3.0, 4.0]]))
        tensor([[0.6000, 0.8000]])
    """

    st_type = "sentence_transformers.models.Normalize"  # no settings: an empty folder

    def forward(self, embeddings: Tensor) -> Tensor:
        # embeddings: (batch, dim)
        return F.normalize(embeddings, p=2, dim=1)
