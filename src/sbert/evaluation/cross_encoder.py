"""CrossEncoderEvaluator: Spearman and Pearson × 100 between gold scores and a cross-encoder's predictions."""

from __future__ import annotations

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sbert.cross_encoder import CrossEncoder
from sbert.evaluation.similarity import ScoredPairsEvaluator, correlation


class CrossEncoderEvaluator(ScoredPairsEvaluator):
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
