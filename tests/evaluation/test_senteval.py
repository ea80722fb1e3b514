from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score

from sbert.data import LabeledPair
from sbert.evaluation import senteval
from sbert.evaluation.senteval import (
    TransferSettings,
    cross_validated,
    evaluate_transfer,
    pair_features,
    train_test,
)

SETTINGS = TransferSettings()


def separable(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian blobs far apart along the first axis: a linear classifier must be perfect."""
    rng = np.random.default_rng(seed)
    labels = np.array(["neg", "pos"] * (n // 2))
    features = rng.normal(size=(n, 5))
    features[:, 0] += np.where(labels == "pos", 8.0, -8.0)
    return features, labels


def test_cross_validation_on_separable_task_is_perfect_and_reproducible() -> None:
    features, labels = separable(200)
    result = cross_validated(features, labels, SETTINGS)
    assert result.accuracy == 100.0
    assert len(result.chosen_c) == 10 and set(result.chosen_c) <= set(SETTINGS.c_grid)
    assert cross_validated(features, labels, SETTINGS).as_dict() == result.as_dict()


def test_random_labels_give_chance_accuracy() -> None:
    features, _ = separable(400)
    labels = np.random.default_rng(1).choice(["a", "b"], size=400)
    assert 35 < cross_validated(features, labels, SETTINGS).accuracy < 65


def test_c_is_chosen_without_the_test_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    features, labels = separable(100)
    seen: list[int] = []
    original = senteval.fit_classifier

    def spy(x: np.ndarray, y: np.ndarray, settings: TransferSettings):  # type: ignore[no-untyped-def]
        seen.append(len(x))
        return original(x, y, settings)

    monkeypatch.setattr(senteval, "fit_classifier", spy)
    cross_validated(features, labels, SETTINGS)
    assert seen == [90] * 10  # each fit sees only the nine training folds


def test_train_test_with_dev_and_f1() -> None:
    x, y = separable(120, seed=2)
    labels = np.where(y == "pos", "1", "0")
    test_x, test_y = x[:40].copy(), labels[:40].copy()
    test_y[:3] = np.where(test_y[:3] == "1", "0", "1")  # three wrong gold labels: 37 of 40 right
    result = train_test((x[40:], labels[40:]), (test_x, test_y), SETTINGS, dev=(x[:20], labels[:20]), f1=True)
    assert result.accuracy == pytest.approx(100 * 37 / 40)
    predicted = labels[:40]
    assert result.f1 == pytest.approx(100 * f1_score(test_y, predicted, pos_label="1"))
    assert result.chosen_c[0] in SETTINGS.c_grid


class KeywordEncoder:
    """Vector = (has "good", has "bad", pseudo-random noise); counts the sentences it encodes."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
        self.seen.extend(sentences)
        rows = []
        for s in sentences:
            noise = np.random.default_rng(len(s) * 31 + sum(map(ord, s))).normal(scale=0.1, size=2)
            rows.append([float("good" in s), float("bad" in s), *noise])
        return np.array(rows, dtype=np.float32)


def test_pair_features_are_senteval_abs_difference_and_product() -> None:
    encoder = KeywordEncoder()
    [(features, labels)] = pair_features(encoder, [LabeledPair("good one", "bad one", "0")])
    u, v = KeywordEncoder().encode(["good one"]), KeywordEncoder().encode(["bad one"])
    np.testing.assert_allclose(features, np.hstack([np.abs(u - v), u * v]))
    assert labels.tolist() == ["0"]


def write_mr_and_mrpc(root: Path) -> None:
    mr = root / "senteval_transfer" / "MR"
    mr.mkdir(parents=True)
    (mr / "rt-polarity.pos").write_text("".join(f"a good film number {i}\n" for i in range(40)), "utf-8")
    (mr / "rt-polarity.neg").write_text("".join(f"a bad film number {i}\n" for i in range(40)), "utf-8")
    mrpc = root / "senteval_transfer" / "MRPC"
    mrpc.mkdir(parents=True)
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    for name, count in (("train", 60), ("test", 20)):
        lines = [
            f"1\t{i}\t{i}\tgood news {i}\tgood times {i}\n"
            if i % 2
            else f"0\t{i}\t{i}\tgood news {i}\tbad times {i}\n"
            for i in range(count)
        ]
        (mrpc / f"msr_paraphrase_{name}.txt").write_text(header + "".join(lines), "utf-8")


def test_evaluate_transfer_on_toy_files(tmp_path: Path) -> None:
    write_mr_and_mrpc(tmp_path)
    encoder, started = KeywordEncoder(), []
    results = evaluate_transfer(encoder, tmp_path, ["MRPC", "MR"], on_task=started.append, protocol="fast")
    assert started == ["MR", "MRPC"]  # Table 5's order
    assert results["MR"]["accuracy"] == 100.0 and results["MR"]["n_test"] == 80
    assert results["MRPC"]["accuracy"] == 100.0 and results["MRPC"]["f1"] == 100.0
    assert results["MRPC"]["n_train"] == 60 and results["MRPC"]["n_test"] == 20
    assert len(encoder.seen) == len(set(encoder.seen))  # each distinct sentence once per task
    assert results["MR"]["protocol"] == "fast" and "chosen_l2" not in results["MR"]
    with pytest.raises(ValueError, match="unknown transfer task 'SICK-E'"):
        evaluate_transfer(encoder, tmp_path, tasks=["SICK-E"])
    with pytest.raises(ValueError, match="unknown transfer protocol 'exact'"):
        evaluate_transfer(encoder, tmp_path, tasks=["MR"], protocol="exact")
    with pytest.raises(TypeError, match="takes SentEvalSettings, not TransferSettings"):
        evaluate_transfer(encoder, tmp_path, tasks=["MR"], settings=SETTINGS)
