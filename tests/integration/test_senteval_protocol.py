"""The senteval protocol on a real task: TREC with the bundled model, against SentEval's own toolkit.

SentEval's toolkit (facebookresearch/SentEval, its classifier run on the CPU, kfold 10, Adam, batch 64,
tenacity 5, epoch size 4) gave 90.00 test and 84.41 validation accuracy on the bundled model's
float32 vectors (benchmarks/senteval_agreement.py). The target is agreement within 0.3.
"""

from pathlib import Path

import pytest

from sbert import SentenceEncoder
from sbert.evaluation.senteval import evaluate_task

pytestmark = pytest.mark.integration


def test_trec_agrees_with_sentevals_toolkit(bundled_encoder: SentenceEncoder, data_dir: Path) -> None:
    result = evaluate_task(bundled_encoder, "TREC", data_dir, protocol="senteval")
    assert result.accuracy == pytest.approx(90.00, abs=0.3)
    assert result.dev_accuracy == pytest.approx(84.41, abs=0.3)
    assert (result.n_train, result.n_test, result.chosen_l2) == (5452, 500, [1e-5])
