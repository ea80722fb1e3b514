"""SimilarityEvaluator: Spearman and Pearson × 100 between gold scores and embedding similarities."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sbert.base.contracts import Encoder
from sbert.data.records import ScoredPair
from sbert.embeddings.similarity import PAIRWISE


class ScoredPairsEvaluator:
    """What an evaluator on pairs with gold scores holds (every kind's: this module's, the
    cross-encoder's): the pairs, checked not empty, and how to run the model on them."""

    def __init__(
        self,
        pairs: Sequence[ScoredPair],
        name: str = "",
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
    ) -> None:
        if not pairs:
            raise ValueError(f"{type(self).__name__} {name!r}: no pairs to evaluate")
        self.pairs, self.name, self.batch_size = list(pairs), name, batch_size
        # None: the model's default (a bar for 1000 sentences or pairs or more).
        self.show_progress_bar = show_progress_bar
        self._check()

    def _check(self) -> None:
        """What a kind of evaluator asks of its pairs beyond being some (raises ValueError)."""


class SimilarityEvaluator(ScoredPairsEvaluator):
    """Score an encoder on sentence pairs with gold similarity scores, as the paper does.

    Each distinct sentence is encoded once. For every similarity (cosine, negated Euclidean, negated
    Manhattan, dot) it reports Spearman and Pearson correlation × 100; ``primary_metric``
    (``spearman_cosine``, the paper's figure) is what training keeps the best model by.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data import ScoredPair
        >>> pairs = [ScoredPair("A man plays guitar.", "A man plays music.", 4.2),
        ...          ScoredPair("A cat sleeps.", "The market fell.", 0.0),
        ...          ScoredPair("A dog runs.", "A dog is running.", 4.8)]
        >>> scores = SimilarityEvaluator(pairs, name="toy")(SentenceEncoder.from_pretrained())
        >>> round(scores["spearman_cosine"], 1)
        100.0
    """

    primary_metric = "spearman_cosine"

    def _check(self) -> None:
        empty = [i for i, p in enumerate(self.pairs) if not p.sentence1.strip() or not p.sentence2.strip()]
        if empty:
            raise ValueError(f"SimilarityEvaluator {self.name!r}: pair {empty[0]} has an empty sentence")

    def __call__(self, model: Encoder) -> dict[str, float]:
        """Correlations × 100, keyed ``spearman_<similarity>`` and ``pearson_<similarity>``."""
        u, v = self.embed(model)
        gold = np.array([p.score for p in self.pairs], dtype=np.float64)
        scores: dict[str, float] = {}
        for similarity, function in PAIRWISE.items():
            predicted = np.asarray(function(u, v), dtype=np.float64)
            scores[f"spearman_{similarity}"] = correlation(spearmanr, predicted, gold)
            scores[f"pearson_{similarity}"] = correlation(pearsonr, predicted, gold)
        return scores

    def embed(self, model: Encoder) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings of the first and second sentences, each distinct sentence encoded once."""
        unique = list(dict.fromkeys(s for p in self.pairs for s in (p.sentence1, p.sentence2)))
        # Only sbert's models take show_progress_bar; baselines have no bar to show.
        bar = {} if self.show_progress_bar is None else {"show_progress_bar": self.show_progress_bar}
        vectors = np.asarray(model.encode(unique, batch_size=self.batch_size, **bar))
        row = {sentence: i for i, sentence in enumerate(unique)}
        u = vectors[[row[p.sentence1] for p in self.pairs]]
        v = vectors[[row[p.sentence2] for p in self.pairs]]
        return u, v


def correlation(function, predicted: np.ndarray, gold: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    """``function`` (scipy's spearmanr or pearsonr) × 100; constant input is an error, not a NaN."""
    if np.ptp(predicted) == 0 or np.ptp(gold) == 0:
        raise ValueError("correlation is undefined: the predicted or the gold scores are constant")
    return float(function(predicted, gold).statistic) * 100
