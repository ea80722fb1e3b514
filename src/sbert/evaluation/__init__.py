"""The paper's evaluations: STS (Spearman of cosine similarity against gold scores), SentEval transfer.

``sbert.evaluation.senteval`` (needs scikit-learn, the ``eval`` extra) and
``sbert.evaluation.baselines`` are imported on their own.
"""

from sbert.evaluation.similarity import SimilarityEvaluator
from sbert.evaluation.sts import STS_SETS, evaluate_sts

__all__ = ["STS_SETS", "SimilarityEvaluator", "evaluate_sts"]
