import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from sbert.data import ScoredPair
from sbert.evaluation import SimilarityEvaluator


class TableEncoder:
    """Looks vectors up in a table and counts what it was asked to encode."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table, self.seen = table, []  # type: ignore[var-annotated]

    def encode(self, sentences, batch_size=32):  # type: ignore[no-untyped-def]
        self.seen.extend(sentences)
        return np.array([self.table[s] for s in sentences], dtype=np.float32)


TABLE = {"a": [1.0, 0.0], "b": [1.0, 0.1], "c": [0.0, 1.0], "d": [-1.0, 0.2], "e": [0.5, 0.5]}
PAIRS = [
    ScoredPair("a", "b", 5.0),
    ScoredPair("a", "c", 1.0),
    ScoredPair("a", "d", 0.0),
    ScoredPair("b", "e", 3.0),
    ScoredPair("c", "e", 3.0),
]  # a tie in the gold scores


def test_correlations_equal_scipy_and_sentences_encoded_once() -> None:
    encoder = TableEncoder(TABLE)
    scores = SimilarityEvaluator(PAIRS)(encoder)
    u = np.array([TABLE[p.sentence1] for p in PAIRS])
    v = np.array([TABLE[p.sentence2] for p in PAIRS])
    cosine = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    gold = [p.score for p in PAIRS]
    assert scores["spearman_cosine"] == pytest.approx(spearmanr(cosine, gold).statistic * 100, abs=1e-4)
    assert scores["pearson_cosine"] == pytest.approx(pearsonr(cosine, gold).statistic * 100, abs=1e-4)
    euclid = -np.linalg.norm(u - v, axis=1)
    assert scores["spearman_euclidean"] == pytest.approx(spearmanr(euclid, gold).statistic * 100, abs=1e-4)
    assert sorted(encoder.seen) == sorted(TABLE)


def test_empty_inputs_are_errors_not_nan() -> None:
    with pytest.raises(ValueError, match="no pairs"):
        SimilarityEvaluator([])
    with pytest.raises(ValueError, match="pair 1 has an empty sentence"):
        SimilarityEvaluator([ScoredPair("a", "b", 1.0), ScoredPair("a", " ", 2.0)])
    constant = [ScoredPair("a", "b", 1.0), ScoredPair("a", "c", 1.0), ScoredPair("b", "c", 1.0)]
    with pytest.raises(ValueError, match="constant"):
        SimilarityEvaluator(constant)(TableEncoder(TABLE))
