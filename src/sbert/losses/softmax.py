"""SoftmaxLoss: the paper's classification objective, o = softmax(W_t · (u, v, |u−v|))."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

# The features the classifier can see; Table 6 of the paper ablates their combinations.
from sbert.base.options import CONCATENATION_PARTS, PAPER_CONCATENATION
from sbert.data.records import NLI_LABELS
from sbert.encoder.model import SentenceEncoder
from sbert.losses.base import SentenceLoss


class SoftmaxLoss(SentenceLoss):
    """Cross-entropy of a linear classifier over the concatenated pair features.

    ``W_t`` has shape ``(len(concatenation) · n) × k`` (n: embedding size, k: number of labels). The
    classifier only serves training: the saved model is the encoder alone, as in the paper.

    Args:
        model: The shared encoder.
        labels: The label set, in the order of the classifier's outputs (default: NLI's three).
        concatenation: Which of ``u``, ``v``, ``|u-v|``, ``u*v`` to concatenate, in order.

    Raises:
        ValueError: an unknown concatenation part, or (in ``forward``) a label outside ``labels``,
            naming the example's index in the batch.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data import LabeledPair
        >>> loss = SoftmaxLoss(SentenceEncoder.from_pretrained())
        >>> loss.classifier.weight.shape
        torch.Size([3, 1152])
        >>> float(loss([LabeledPair("A man sleeps.", "A man is asleep.", "entailment")]).detach()) > 0
        True
    """

    # The classifier sees u and v before any Normalize layer, as in the paper (whose models had none).
    # On unit vectors a freshly initialised W_t gives near-zero logits, and the encoder bends to that
    # random head instead: one NLI epoch took the bundled model's STSb dev from 86.7 to 51.7 on unit
    # vectors, to 73.8 on the unnormalised ones. Cosine similarity, used everywhere else, is unchanged.
    normalized_embeddings = False

    def __init__(
        self,
        model: SentenceEncoder,
        labels: Sequence[str] = NLI_LABELS,
        concatenation: Sequence[str] = PAPER_CONCATENATION,
    ) -> None:
        super().__init__(model)
        unknown = [part for part in concatenation if part not in CONCATENATION_PARTS]
        if unknown or not concatenation:
            raise ValueError(
                f"concatenation {list(concatenation)}: choose parts among {', '.join(CONCATENATION_PARTS)}"
            )
        if len(set(labels)) < 2:
            raise ValueError(f"SoftmaxLoss needs at least two distinct labels, got {list(labels)}")
        self.labels = tuple(labels)
        self.label_index = {label: i for i, label in enumerate(self.labels)}
        self.concatenation = tuple(concatenation)
        self.classifier = nn.Linear(len(self.concatenation) * model.dim, len(self.labels))
        self.classifier.to(model.device)

    def features(self, u: Tensor, v: Tensor) -> Tensor:
        """The classifier's input, (batch, len(concatenation) · dim)."""
        parts = {"u": lambda: u, "v": lambda: v, "|u-v|": lambda: (u - v).abs(), "u*v": lambda: u * v}
        return torch.cat([parts[name]() for name in self.concatenation], dim=1)

    def targets(self, examples: Sequence[Any]) -> Tensor:
        """Class indices of the examples' labels, (batch,)."""
        indices = []
        for position, example in enumerate(examples):
            if example.label not in self.label_index:
                raise ValueError(
                    f"example {position} of the batch: label {example.label!r} is not one of "
                    f"{', '.join(self.labels)}"
                )
            indices.append(self.label_index[example.label])
        return torch.tensor(indices, dtype=torch.long, device=self.classifier.weight.device)

    def logits(self, u: Tensor, v: Tensor) -> Tensor:
        """Unnormalised class scores W_t · concat, (batch, k)."""
        return self.classifier(self.features(u, v))

    def loss(self, examples: Sequence[Any], embeddings: list[Tensor]) -> Tensor:
        u, v = embeddings  # (batch, dim) each
        return nn.functional.cross_entropy(self.logits(u, v), self.targets(examples))
