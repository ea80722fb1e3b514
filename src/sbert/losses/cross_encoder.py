"""CrossEncoderLoss: train a BERT cross-encoder, the paper's accurate-but-slow baseline, with the same trainer."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sbert.cross_encoder import CrossEncoder
from sbert.data.records import LabeledPair, ScoredPair


class CrossEncoderLoss(nn.Module):
    """Regression or classification loss of a :class:`CrossEncoder` on pairs.

    - ``ScoredPair`` examples (one output): binary cross-entropy between ``sigmoid(logit)`` and the gold
      score scaled to [0, 1], so that ``predict`` (which applies the sigmoid) returns that scale.
    - ``LabeledPair`` examples (k outputs): cross-entropy over the model's ``label_names``.

    Args:
        model: The cross-encoder; the trainer saves it.
        score_range: Gold scores' range, mapped to [0, 1] (STSb: 0-5).

    Examples:
        >>> from sbert.cross_encoder import CrossEncoder
        >>> from sbert.data import ScoredPair
        >>> loss = CrossEncoderLoss(CrossEncoder.from_pretrained(num_labels=1))
        >>> loss([ScoredPair("A man plays guitar.", "A man plays music.", 4.0)]).shape
        torch.Size([])
    """

    def __init__(self, model: CrossEncoder, score_range: tuple[float, float] = (0.0, 5.0)) -> None:
        super().__init__()
        self.model = model
        self.low, self.high = score_range

    def lengths(self, examples: Sequence[ScoredPair | LabeledPair]) -> list[int]:
        """Token length of each pair, for grouping batches by length."""
        return self.model.tokenize([(e.sentence1, e.sentence2) for e in examples]).lengths

    def forward(self, examples: Sequence[ScoredPair | LabeledPair]) -> Tensor:
        if not examples:
            raise ValueError("CrossEncoderLoss: empty batch")
        logits = self.model(self.model.collate([(e.sentence1, e.sentence2) for e in examples])).float()
        if self.model.num_labels == 1:
            return F.binary_cross_entropy_with_logits(logits[:, 0], self._scaled_scores(examples))
        return F.cross_entropy(logits, self._label_ids(examples))

    def _scaled_scores(self, examples: Sequence[ScoredPair | LabeledPair]) -> Tensor:
        scores = []
        for index, example in enumerate(examples):
            if not isinstance(example, ScoredPair) or not self.low <= example.score <= self.high:
                raise ValueError(
                    f"CrossEncoderLoss: example {index} needs a score in [{self.low}, {self.high}], got {example!r}"
                )
            scores.append((example.score - self.low) / (self.high - self.low))
        return torch.tensor(scores, device=self.model.device)

    def _label_ids(self, examples: Sequence[ScoredPair | LabeledPair]) -> Tensor:
        names = self.model.label_names
        ids = []
        for index, example in enumerate(examples):
            if not isinstance(example, LabeledPair) or example.label not in names:
                raise ValueError(
                    f"CrossEncoderLoss: example {index} needs a label among {names}, got {example!r}"
                )
            ids.append(names.index(example.label))
        return torch.tensor(ids, device=self.model.device)
