"""SentEval transfer evaluation: logistic regression on frozen sentence embeddings (Table 5).

The encoder is never trained here: each task's sentences are encoded once, and a classifier learns the
labels from the vectors. Two protocols:

- ``senteval`` (default): SentEval's own default protocol, to compare with the paper's Table 5 and
  the literature; see :mod:`sbert.evaluation.senteval_validation` (PyTorch logistic regression,
  Adam, L2 grid chosen by nested 10-fold cross-validation, early stopping). The data are read as
  SentEval reads them: blank lines of CR and MPQA kept as empty sentences, each sentence split on
  whitespace and re-joined with single spaces, each split ordered by length and label as SentEval
  orders it before it makes its folds.
- ``fast``: scikit-learn's L-BFGS logistic regression on standardised features, ``C`` chosen by a
  3-fold inner cross-validation, blank lines dropped. Several times faster; its accuracies run above
  SentEval's by up to a few points, so they are not comparable with published Table 5 figures.

The tasks under ``fast``:

- MR, CR, SUBJ, MPQA: 10-fold stratified cross-validation; in each fold the inverse regularisation
  ``C`` is chosen by an inner cross-validation on the nine training folds only.
- SST-2: trained on train, ``C`` chosen on dev, accuracy on test.
- TREC: ``C`` chosen by cross-validation inside train, accuracy on the test set.
- MRPC: the pair's features are ``(|u - v|, u * v)``, exactly as SentEval builds them; ``C`` chosen by
  cross-validation inside train; accuracy and F1 (paraphrase class) on the test set.

All splits use a fixed seed (SentEval's 1111).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from sbert.base.contracts import Encoder
from sbert.data.records import LabeledPair, LabeledSentence
from sbert.data.transfer import (
    BINARY_TASK_FILES,
    TREC_LABELS,
    read_binary_task,
    read_mrpc,
    read_sst2,
    read_trec,
)
from sbert.evaluation import senteval_validation as validation
from sbert.evaluation.senteval_validation import SentEvalSettings
from sbert.evaluation.sts import encode_once

TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
PROTOCOLS = ("senteval", "fast")
CROSS_VALIDATED_TASKS = tuple(BINARY_TASK_FILES)  # MR, CR, SUBJ, MPQA
Split = tuple[np.ndarray, np.ndarray]  # features (n, dim), labels (n,)
T = TypeVar("T")


@dataclass(frozen=True)
class TransferSettings:
    """How the classifiers are fitted and validated.

    Attributes:
        c_grid: Candidate inverse regularisation strengths (on standardised features).
        folds: Outer cross-validation folds (MR, CR, SUBJ, MPQA).
        inner_folds: Cross-validation folds that choose ``C`` inside the training data.
        seed: Seed of every split and of the solver.
        max_iter: L-BFGS iteration limit.
    """

    c_grid: tuple[float, ...] = (0.001, 0.003, 0.01, 0.03, 0.1, 1.0)
    folds: int = 10
    inner_folds: int = 3
    seed: int = 1111
    max_iter: int = 1000


@dataclass
class TransferResult:
    """A task's scores (× 100) and how they were obtained.

    ``n_train`` and ``n_test`` count examples; under cross-validation both are the whole task (each
    example is tested once, by the fold that left it out). ``chosen_c`` (``fast``): one ``C`` per
    fitted fold; ``chosen_l2`` and ``dev_accuracy`` (``senteval``): the chosen weight decays and the
    validation accuracy that chose them.
    """

    accuracy: float
    n_train: int
    n_test: int
    chosen_c: list[float] | None = None
    f1: float | None = None
    seconds: float = 0.0
    protocol: str = "fast"
    chosen_l2: list[float] | None = None
    dev_accuracy: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {key: value for key, value in self.__dict__.items() if value is not None}


def fit_classifier(features: np.ndarray, labels: np.ndarray, settings: TransferSettings) -> Pipeline:
    """Standardise, then logistic regression with ``C`` chosen by inner cross-validation on these data.

    Examples:
        >>> x = np.array([[0.0], [0.1], [0.2], [1.0], [1.1], [1.2]])
        >>> y = np.array([0, 0, 0, 1, 1, 1])
        >>> fit_classifier(x, y, TransferSettings(inner_folds=3)).predict([[0.05], [1.05]]).tolist()
        [0, 1]
    """
    inner = StratifiedKFold(settings.inner_folds, shuffle=True, random_state=settings.seed)
    search = LogisticRegressionCV(
        Cs=list(settings.c_grid),
        cv=inner,
        scoring="accuracy",
        l1_ratios=(0.0,),  # plain L2, as SentEval
        max_iter=settings.max_iter,
        random_state=settings.seed,
        use_legacy_attributes=False,
    )
    return make_pipeline(StandardScaler(), search).fit(features, labels)


def chosen_c(classifier: Pipeline) -> float:
    """The ``C`` the inner cross-validation picked."""
    return float(classifier[-1].C_)


def cross_validated(features: np.ndarray, labels: np.ndarray, settings: TransferSettings) -> TransferResult:
    """Accuracy over ``settings.folds`` stratified folds; ``C`` is chosen inside each training part."""
    outer = StratifiedKFold(settings.folds, shuffle=True, random_state=settings.seed)
    correct, choices = 0, []
    for train, test in outer.split(features, labels):
        classifier = fit_classifier(features[train], labels[train], settings)
        correct += int((classifier.predict(features[test]) == labels[test]).sum())
        choices.append(chosen_c(classifier))
    return TransferResult(100 * correct / len(labels), len(labels), len(labels), choices)


def train_test(
    train: Split,
    test: Split,
    settings: TransferSettings,
    dev: Split | None = None,
    f1: bool = False,
) -> TransferResult:
    """Fit on ``train`` (``C`` from ``dev`` when given, else from cross-validation inside ``train``);
    score on ``test``."""
    if dev is None:
        classifier = fit_classifier(*train, settings)
        c = chosen_c(classifier)
    else:
        c, classifier = max(
            ((c, _fit_fixed(*train, c, settings)) for c in settings.c_grid),
            key=lambda chosen: accuracy_score(dev[1], chosen[1].predict(dev[0])),
        )
    predicted = classifier.predict(test[0])
    result = TransferResult(100 * accuracy_score(test[1], predicted), len(train[1]), len(test[1]), [c])
    if f1:
        result.f1 = 100 * f1_score(test[1], predicted, pos_label="1")
    return result


def _fit_fixed(features: np.ndarray, labels: np.ndarray, c: float, settings: TransferSettings) -> Pipeline:
    regression = LogisticRegression(C=c, max_iter=settings.max_iter, random_state=settings.seed)
    return make_pipeline(StandardScaler(), regression).fit(features, labels)


def sentence_features(model: Encoder, *parts: Sequence[LabeledSentence], batch_size: int = 32) -> list[Split]:
    """``(vectors, labels)`` for each part; every distinct sentence of all parts is encoded once."""
    cache = encode_once(model, [s.text for part in parts for s in part], batch_size)
    return [(cache.encode([s.text for s in part]), np.array([s.label for s in part])) for part in parts]


def pair_features(model: Encoder, *parts: Sequence[LabeledPair], batch_size: int = 32) -> list[Split]:
    """SentEval's pair features ``(|u - v|, u * v)`` and labels for each part, sentences encoded once."""
    cache = encode_once(
        model, [s for part in parts for p in part for s in (p.sentence1, p.sentence2)], batch_size
    )
    features = []
    for part in parts:
        u = cache.encode([p.sentence1 for p in part])  # (pairs, dim)
        v = cache.encode([p.sentence2 for p in part])  # (pairs, dim)
        features.append((np.hstack([np.abs(u - v), u * v]), np.array([p.label for p in part])))
    return features


def evaluate_task(
    model: Encoder,
    task: str,
    data_dir: str | Path | None = None,
    settings: TransferSettings | SentEvalSettings | None = None,
    batch_size: int = 32,
    skip_bad_lines: bool = False,
    protocol: str = "senteval",
) -> TransferResult:
    """Evaluate one transfer task (one of :data:`TRANSFER_TASKS`) under ``protocol`` (``senteval`` or ``fast``)."""
    if task not in TRANSFER_TASKS:
        raise ValueError(f"unknown transfer task {task!r}; choose from {', '.join(TRANSFER_TASKS)}")
    start = time.perf_counter()
    if protocol == "senteval":
        result = _senteval_task(
            model, task, data_dir, _settings(settings, SentEvalSettings), batch_size, skip_bad_lines
        )
    elif protocol == "fast":
        result = _fast_task(
            model, task, data_dir, _settings(settings, TransferSettings), batch_size, skip_bad_lines
        )
    else:
        raise ValueError(f"unknown transfer protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")
    result.seconds = time.perf_counter() - start
    return result


def _settings(settings: object, kind: type[T]) -> T:
    if settings is None:
        return kind()
    if not isinstance(settings, kind):
        raise TypeError(f"this protocol takes {kind.__name__}, not {type(settings).__name__}")
    return settings


def _fast_task(
    model: Encoder,
    task: str,
    data_dir: str | Path | None,
    settings: TransferSettings,
    batch_size: int,
    skip: bool,
) -> TransferResult:
    if task in CROSS_VALIDATED_TASKS:
        [(x, y)] = sentence_features(model, read_binary_task(task, data_dir), batch_size=batch_size)
        return cross_validated(x, y, settings)
    if task == "SST2":
        train, dev, test = sentence_features(
            model,
            *(read_sst2(split, data_dir, skip) for split in ("train", "dev", "test")),
            batch_size=batch_size,
        )
        return train_test(train, test, settings, dev=dev)
    if task == "TREC":
        train, test = sentence_features(
            model,
            read_trec("train", data_dir, skip),
            read_trec("test", data_dir, skip),
            batch_size=batch_size,
        )
        return train_test(train, test, settings)
    train, test = pair_features(
        model, read_mrpc("train", data_dir, skip), read_mrpc("test", data_dir, skip), batch_size=batch_size
    )
    return train_test(train, test, settings, f1=True)


def _senteval_task(
    model: Encoder,
    task: str,
    data_dir: str | Path | None,
    settings: SentEvalSettings,
    batch_size: int,
    skip: bool,
) -> TransferResult:
    if task in CROSS_VALIDATED_TASKS:
        first_class = BINARY_TASK_FILES[task][0][1]  # SentEval's label 1 (positive, objective)
        data = read_binary_task(task, data_dir, keep_blank_lines=True)
        [(x, y)] = senteval_features(model, [data], lambda label: int(label == first_class), batch_size)
        outcome = validation.inner_kfold(x, y, 2, settings)
        sizes = (len(y), len(y))
    else:
        if task == "SST2":
            parts = [read_sst2(split, data_dir, skip) for split in ("train", "dev", "test")]
            train, dev, test = senteval_features(model, parts, int, batch_size)
            outcome = validation.split(train, dev, test, 2, settings)
        elif task == "TREC":
            parts = [read_trec(split, data_dir, skip) for split in ("train", "test")]
            train, test = senteval_features(model, parts, TREC_LABELS.index, batch_size)
            outcome = validation.kfold(train, test, len(TREC_LABELS), settings)
        else:
            pairs = [_senteval_pair_order(read_mrpc(split, data_dir, skip)) for split in ("train", "test")]
            train, test = (
                (x, y.astype(np.int64)) for x, y in pair_features(model, *pairs, batch_size=batch_size)
            )
            outcome = validation.kfold(train, test, 2, settings)
        sizes = (len(train[1]), len(test[1]))
    result = TransferResult(
        outcome.accuracy,
        *sizes,
        protocol="senteval",
        chosen_l2=outcome.chosen_l2,
        dev_accuracy=outcome.dev_accuracy,
    )
    if task == "MRPC":
        result.f1 = round(100 * float(f1_score(test[1], outcome.predicted)), 2)
    return result


def senteval_features(
    model: Encoder,
    parts: Sequence[Sequence[LabeledSentence]],
    label_index: Callable[[str], int],
    batch_size: int = 32,
) -> list[Split]:
    """``(vectors, class indices)`` of each part as SentEval builds them.

    A sentence is its whitespace tokens joined by single spaces; each part is ordered by (token count,
    class index), as SentEval sorts it before encoding, because its folds and minibatches depend on
    the order. Every distinct sentence of all parts is encoded once.
    """
    ordered = []
    for part in parts:
        rows = [(" ".join(s.text.split()), label_index(s.label)) for s in part]
        ordered.append(sorted(rows, key=lambda row: (len(row[0].split()), row[1])))
    cache = encode_once(model, [text for rows in ordered for text, _ in rows], batch_size)
    return [
        (
            np.asarray(cache.encode([text for text, _ in rows])),
            np.array([label for _, label in rows], dtype=np.int64),
        )
        for rows in ordered
    ]


def _senteval_pair_order(pairs: Sequence[LabeledPair]) -> list[LabeledPair]:
    """MRPC pairs as SentEval orders them: by the token counts of both sentences, then label."""
    joined = [
        LabeledPair(" ".join(p.sentence1.split()), " ".join(p.sentence2.split()), p.label) for p in pairs
    ]
    return sorted(joined, key=lambda p: (len(p.sentence1.split()), len(p.sentence2.split()), int(p.label)))


def evaluate_transfer(
    model: Encoder,
    data_dir: str | Path | None = None,
    tasks: Sequence[str] | None = None,
    settings: TransferSettings | SentEvalSettings | None = None,
    batch_size: int = 32,
    on_task: Callable[[str], None] | None = None,
    skip_bad_lines: bool = False,
    protocol: str = "senteval",
) -> dict[str, dict[str, object]]:
    """Evaluate an encoder on the SentEval transfer tasks of the paper's Table 5.

    Args:
        model: Anything with ``encode(sentences, batch_size=...)``.
        data_dir: The data directory (default ``$SBERT_DATA``).
        tasks: Any of ``MR CR SUBJ MPQA SST2 TREC MRPC`` (default: all seven).
        settings: :class:`SentEvalSettings` (``senteval``) or :class:`TransferSettings` (``fast``);
            default: the protocol's defaults.
        batch_size: Sentences per forward pass.
        on_task: Called with each task's name before it starts (for progress display).
        skip_bad_lines: Skip malformed data lines (and log how many) instead of raising.
        protocol: ``senteval`` (default; SentEval's own protocol, comparable with the paper) or
            ``fast`` (scikit-learn, several times faster, not comparable).

    Returns:
        ``{task: {"accuracy", "n_train", "n_test", "protocol", "seconds", ...}}``, scores × 100, with
        ``chosen_l2`` and ``dev_accuracy`` (``senteval``) or ``chosen_c`` (``fast``), and MRPC's ``f1``.

    Not run by the tests: TREC's cross-validated fits take about 20 s on 2 cores
    (tests/integration/test_senteval_protocol.py runs the protocol).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained(precision="float32")  # doctest: +SKIP
        >>> results = evaluate_transfer(model, "../shared/data", ["TREC"])  # doctest: +SKIP
        >>> results["TREC"]["accuracy"] > 80  # doctest: +SKIP
        True
    """
    chosen = TRANSFER_TASKS if tasks is None else tasks
    unknown = [task for task in chosen if task not in TRANSFER_TASKS]
    if unknown:
        raise ValueError(f"unknown transfer task {unknown[0]!r}; choose from {', '.join(TRANSFER_TASKS)}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown transfer protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")
    results = {}
    for task in [t for t in TRANSFER_TASKS if t in chosen]:
        if on_task is not None:
            on_task(task)
        result = evaluate_task(model, task, data_dir, settings, batch_size, skip_bad_lines, protocol)
        results[task] = result.as_dict()
    return results
