from pathlib import Path

import numpy as np
import pytest
import torch

from sbert.data import LabeledSentence
from sbert.evaluation import senteval_validation
from sbert.evaluation.logistic import ClassifierSettings, Fit, FittedModels
from sbert.evaluation.senteval import evaluate_transfer, senteval_features
from sbert.evaluation.senteval_validation import SentEvalSettings, inner_kfold, kfold, split

# A high learning rate: toy sets give SentEval's Adam (lr 0.001) too few steps to learn.
QUICK = SentEvalSettings(folds=3, classifier=ClassifierSettings(max_epoch=8, learning_rate=0.05))


def blobs(n: int, seed: int = 0, scale: float = 50.0) -> tuple[np.ndarray, np.ndarray]:
    """Two classes apart along the first axis, scaled so that Adam at lr 0.001 learns in a few steps."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    features = rng.normal(size=(n, 4)).astype(np.float32)
    features[:, 0] += scale * (labels - 0.5)
    return features, labels


def test_inner_kfold_never_trains_on_the_test_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = blobs(90)
    calls: list[tuple[list[Fit], np.ndarray]] = []
    original = senteval_validation.fit_logistic

    def spy(features, labels, classes, fits, l2, settings):  # type: ignore[no-untyped-def]
        calls.append((fits, l2))
        return original(features, labels, classes, fits, l2, settings)

    monkeypatch.setattr(senteval_validation, "fit_logistic", spy)
    result = inner_kfold(x, y, 2, QUICK)
    assert result.accuracy == 100.0
    (inner, grid), (final, chosen) = calls
    assert len(inner) == 9 and grid.tolist() == [list(QUICK.l2_grid)] * 9  # 3 outer x 3 inner, whole grid
    assert len(final) == 3 and chosen[:, 0].tolist() == result.chosen_l2
    for k in range(3):
        outer_train = {int(i) for i in [*final[k].train, *final[k].dev]}
        test = set(range(90)) - outer_train
        assert len(test) == 30 and len(final[k].dev) == int(0.05 * 60)  # SentEval's 5 % split
        for fit in inner[3 * k : 3 * k + 3]:
            rows = {int(i) for i in [*fit.train, *fit.dev]}
            assert rows == outer_train and not rows & test


def test_grid_ties_go_to_the_smallest_l2_as_sentevals_argmax(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = blobs(60)

    def constant(features, labels, classes, fits, l2, settings):  # type: ignore[no-untyped-def]
        # every strength reaches 0.8 on validation; weights: always class 0
        weight = torch.zeros(len(fits), l2.shape[1], features.shape[1], classes)
        bias = torch.tensor([1.0, 0.0]).expand(len(fits), l2.shape[1], 2)
        return FittedModels(weight, bias, np.full(l2.shape, 0.8))

    monkeypatch.setattr(senteval_validation, "fit_logistic", constant)
    result = kfold((x, y), (x[:10], y[:10]), 2, QUICK)
    assert result.chosen_l2 == [1e-5] and result.dev_accuracy == 80.0
    assert result.accuracy == 50.0 and result.predicted.tolist() == [0] * 10


def test_split_chooses_on_dev_and_scores_test() -> None:
    x, y = blobs(200, seed=1)
    result = split((x[:120], y[:120]), (x[120:160], y[120:160]), (x[160:], y[160:]), 2, QUICK)
    assert result.accuracy == 100.0 and result.dev_accuracy == 100.0
    assert result.chosen_l2[0] in QUICK.l2_grid and len(result.predicted) == 40


class ScaledKeywordEncoder:
    """(50 if "good", 50 if "bad", small noise): learnable within a few SentEval epochs."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
        self.seen.extend(sentences)
        noise = np.random.default_rng(len(self.seen)).normal(scale=0.1, size=(len(sentences), 2))
        keys = [[50.0 * ("good" in s), 50.0 * ("bad" in s)] for s in sentences]
        return np.hstack([np.array(keys), noise]).astype(np.float32)


def test_senteval_features_order_and_whitespace_as_senteval() -> None:
    part = [
        LabeledSentence("a  good   long film", "positive"),
        LabeledSentence("", "negative"),
        LabeledSentence("bad one", "negative"),
        LabeledSentence("good one", "positive"),
    ]
    encoder = ScaledKeywordEncoder()
    [(x, y)] = senteval_features(encoder, [part], lambda label: int(label == "positive"))
    # sorted by (token count, label), stable: "", then "bad one" (0) before "good one" (1), then the long one
    assert y.tolist() == [0, 0, 1, 1]
    assert sorted(encoder.seen) == ["", "a good long film", "bad one", "good one"]
    assert x[:, 0].tolist() == [0.0, 0.0, 50.0, 50.0]


def test_evaluate_transfer_senteval_protocol_on_toy_files(tmp_path: Path) -> None:
    mr = tmp_path / "senteval_transfer" / "MR"
    mr.mkdir(parents=True)
    (mr / "rt-polarity.pos").write_text("".join(f"a good film number {i}\n" for i in range(45)), "utf-8")
    (mr / "rt-polarity.neg").write_text(
        "".join(f"a bad film number {i}\n" for i in range(44)) + "\n", "utf-8"
    )
    results = evaluate_transfer(ScaledKeywordEncoder(), tmp_path, ["MR"], settings=QUICK)
    mr_result = results["MR"]
    assert mr_result["protocol"] == "senteval" and mr_result["n_test"] == 90  # the blank line is kept
    assert mr_result["accuracy"] == 100.0 and mr_result["dev_accuracy"] == 100.0
    assert len(mr_result["chosen_l2"]) == 3 and "chosen_c" not in mr_result
