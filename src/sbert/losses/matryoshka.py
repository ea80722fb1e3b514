"""MatryoshkaLoss: train the first d dimensions of a vector to work on their own (Kusupati et al., 2022).

Any sentence loss is computed on the full vectors and again on their first 256, 128, 64, ...
dimensions, and the weighted sum is minimised: a model so trained can be served truncated
(``dimensions`` on ``/v1/embeddings``) with less loss than one that never saw its prefixes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from sbert.losses.base import SentenceLoss

DEFAULT_DIMENSIONS = (768, 512, 256, 128, 64)


class MatryoshkaLoss(SentenceLoss):
    """``inner``'s loss summed over prefixes of the embeddings, as sentence-transformers' ``MatryoshkaLoss``.

    The sentences are embedded once; each prefix is a slice of the same vectors, so the network
    runs one forward and one backward pass a batch whatever the number of dimensions.

    Args:
        inner: The loss to apply at each dimension (it owns the encoder).
        dimensions: The prefix sizes, each at most the model's dimension (default: those of
            :data:`DEFAULT_DIMENSIONS` that fit, and the full size).
        weights: One weight a dimension (default 1 each).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.losses import MultipleNegativesRankingLoss
        >>> loss = MatryoshkaLoss(MultipleNegativesRankingLoss(SentenceEncoder.from_pretrained()), (384, 128, 64))
        >>> loss.dimensions
        (384, 128, 64)
    """

    def __init__(
        self,
        inner: SentenceLoss,
        dimensions: Sequence[int] | None = None,
        weights: Sequence[float] | None = None,
    ) -> None:
        from sbert.losses.softmax import SoftmaxLoss

        if isinstance(inner, SoftmaxLoss):  # its classifier takes whole vectors: no prefix fits it
            raise ValueError(
                "MatryoshkaLoss cannot wrap SoftmaxLoss; use mnrl, cosent, cosine-mse or triplet"
            )
        super().__init__(inner.model)
        full = int(inner.model.dim)
        if dimensions is None:
            dimensions = [full, *(d for d in DEFAULT_DIMENSIONS if d < full)]
        self.dimensions = tuple(int(d) for d in dimensions)
        bad = [d for d in self.dimensions if not 1 <= d <= full]
        if not self.dimensions or bad:
            raise ValueError(
                f"Matryoshka dimensions must be between 1 and the model's {full}, got {list(dimensions)}"
            )
        self.weights = tuple(
            float(w) for w in (weights if weights is not None else [1.0] * len(self.dimensions))
        )
        if len(self.weights) != len(self.dimensions):
            raise ValueError(f"{len(self.weights)} weights for {len(self.dimensions)} dimensions")
        self.inner = inner
        self.normalized_embeddings = inner.normalized_embeddings
        self.in_batch_negatives = inner.in_batch_negatives

    def lengths(self, examples: Sequence[Any]) -> list[int]:
        return self.inner.lengths(examples)

    def forward(self, examples: Sequence[Any]) -> Tensor:
        if not examples:
            raise ValueError(f"{type(self).__name__}: empty batch")
        embeddings = self.inner.embed_columns(examples)  # (batch, dim) per column
        return self.loss(examples, embeddings)

    def loss(self, examples: Sequence[Any], embeddings: list[Tensor]) -> Tensor:
        total = embeddings[0].new_zeros(())
        for dim, weight in zip(self.dimensions, self.weights):
            total = total + weight * self.inner.loss(examples, [column[:, :dim] for column in embeddings])
        return total
