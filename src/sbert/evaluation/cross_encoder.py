"""CrossEncoderEvaluator: Spearman and Pearson × 100 between gold scores and a cross-encoder's predictions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sbert.cross_encoder import CrossEncoder
from sbert.data.records import ScoredPair
from sbert.evaluation.similarity import correlation


class CrossEncoderEvaluator:
    """Score a regression cross-encoder on pairs with gold scores (the paper's BERT-STSb baseline).

    Examples:
        >>> from sbert.cross_encoder import CrossEncoder
        >>> from sbert.data import ScoredPair
        >>> pairs = [ScoredPair("A dog runs.", "A dog is running.", 4.8), ScoredPair("A cat.", "Markets fell.", 0.1),
        ...          ScoredPair("A man sings.", "A man is singing a song.", 4.0)]
        >>> sorted(CrossEncoderEvaluator(pairs)(CrossEncoder.from_pretrained(num_labels=1)))
        ['pearson', 'spearman']
    """

    primary_metric = "spearman"

    def __init__(
        self,
        pairs: Sequence[ScoredPair],
        name: str = "",
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
    ) -> None:
        if not pairs:
            raise ValueError(f"CrossEncoderEvaluator {name!r}: no pairs to evaluate")
        self.pairs, self.name, self.batch_size = list(pairs), name, batch_size
        self.show_progress_bar = show_progress_bar  # None: a bar for 1000 pairs or more

    def __call__(self, model: CrossEncoder) -> dict[str, float]:
        predicted = np.asarray(
            model.predict(
                [(p.sentence1, p.sentence2) for p in self.pairs],
                batch_size=self.batch_size,
                show_progress_bar=self.show_progress_bar,
            ),
            dtype=np.float64,
        )
        gold = np.array([p.score for p in self.pairs], dtype=np.float64)
        return {
            "spearman": correlation(spearmanr, predicted, gold),
            "pearson": correlation(pearsonr, predicted, gold),
        }
