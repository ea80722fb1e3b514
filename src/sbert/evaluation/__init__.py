"""The paper's evaluations: STS (Spearman of cosine similarity against gold scores), SentEval transfer."""

from sbert.evaluation.similarity import SimilarityEvaluator

__all__ = ["SimilarityEvaluator"]
