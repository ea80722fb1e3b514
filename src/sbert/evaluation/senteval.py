"""SentEval-style transfer evaluation: logistic regression on frozen sentence embeddings (Table 5).

The encoder is never trained here: each task's sentences are encoded once, and a scikit-learn
logistic regression learns the labels from the vectors.

- MR, CR, SUBJ, MPQA: 10-fold stratified cross-validation; in each fold the inverse regularisation
  ``C`` is chosen by an inner cross-validation on the nine training folds only.
- SST-2: trained on train, ``C`` chosen on dev, accuracy on test.
- TREC: ``C`` chosen by cross-validation inside train, accuracy on the test set.
- MRPC: the pair's features are ``(|u - v|, u * v)``, exactly as SentEval builds them; ``C`` chosen by
  cross-validation inside train; accuracy and F1 (paraphrase class) on the test set.

Two choices differ from SentEval's defaults, both for speed on a CPU: features are standardised
(fitted on the training data only), which lets one small ``C`` grid suit every encoder, and inner
cross-validation uses 3 folds. All splits use a fixed seed (SentEval's 1111).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from sbert.data.records import LabeledPair, LabeledSentence
from sbert.data.transfer import BINARY_TASK_FILES, read_binary_task, read_mrpc, read_sst2, read_trec
from sbert.evaluation.similarity import Encoder
from sbert.evaluation.sts import encode_once

TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
CROSS_VALIDATED_TASKS = tuple(BINARY_TASK_FILES)  # MR, CR, SUBJ, MPQA
Split = tuple[np.ndarray, np.ndarray]  # features (n, dim), labels (n,)


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
    example is tested once, by the fold that left it out). ``chosen_c``: one ``C`` per fitted fold.
    """

    accuracy: float
    n_train: int
    n_test: int
    chosen_c: list[float] = field(default_factory=list)
    f1: float | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {key: value for key, value in self.__dict__.items() if value is not None}


def fit_classifier(features: np.ndarray, labels: np.ndarray, settings: TransferSettings) -> Pipeline:
    """Standardise, then logistic regression with ``C`` chosen by inner cross-validation on these data.

    Example:
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
    settings: TransferSettings | None = None,
    batch_size: int = 32,
    skip_bad_lines: bool = False,
) -> TransferResult:
    """Evaluate one transfer task (one of :data:`TRANSFER_TASKS`)."""
    settings = settings or TransferSettings()
    skip = skip_bad_lines
    start = time.perf_counter()
    if task in CROSS_VALIDATED_TASKS:
        [(x, y)] = sentence_features(model, read_binary_task(task, data_dir), batch_size=batch_size)
        result = cross_validated(x, y, settings)
    elif task == "SST2":
        train, dev, test = sentence_features(
            model,
            *(read_sst2(split, data_dir, skip) for split in ("train", "dev", "test")),
            batch_size=batch_size,
        )
        result = train_test(train, test, settings, dev=dev)
    elif task == "TREC":
        train, test = sentence_features(
            model,
            read_trec("train", data_dir, skip),
            read_trec("test", data_dir, skip),
            batch_size=batch_size,
        )
        result = train_test(train, test, settings)
    elif task == "MRPC":
        train, test = pair_features(
            model,
            read_mrpc("train", data_dir, skip),
            read_mrpc("test", data_dir, skip),
            batch_size=batch_size,
        )
        result = train_test(train, test, settings, f1=True)
    else:
        raise ValueError(f"unknown transfer task {task!r}; choose from {', '.join(TRANSFER_TASKS)}")
    result.seconds = time.perf_counter() - start
    return result


def evaluate_transfer(
    model: Encoder,
    data_dir: str | Path | None = None,
    tasks: Sequence[str] | None = None,
    settings: TransferSettings | None = None,
    batch_size: int = 32,
    on_task: Callable[[str], None] | None = None,
    skip_bad_lines: bool = False,
) -> dict[str, dict[str, object]]:
    """Evaluate an encoder on the SentEval transfer tasks of the paper's Table 5.

    Args:
        model: Anything with ``encode(sentences, batch_size=...)``.
        data_dir: The data directory (default ``$SBERT_DATA``).
        tasks: Any of ``MR CR SUBJ MPQA SST2 TREC MRPC`` (default: all seven).
        settings: Classifier settings (default :class:`TransferSettings`).
        batch_size: Sentences per forward pass.
        on_task: Called with each task's name before it starts (for progress display).
        skip_bad_lines: Skip malformed data lines (and log how many) instead of raising.

    Returns:
        ``{task: {"accuracy", "n_train", "n_test", "chosen_c", "seconds"[, "f1"]}}``, scores × 100.

    Example:
        >>> from sbert import SentenceEncoder
        >>> results = evaluate_transfer(SentenceEncoder.from_pretrained(), "../shared/data", ["TREC"])  # doctest: +SKIP
        >>> results["TREC"]["accuracy"] > 80  # doctest: +SKIP
        True
    """
    chosen = TRANSFER_TASKS if tasks is None else tasks
    unknown = [task for task in chosen if task not in TRANSFER_TASKS]
    if unknown:
        raise ValueError(f"unknown transfer task {unknown[0]!r}; choose from {', '.join(TRANSFER_TASKS)}")
    results = {}
    for task in [t for t in TRANSFER_TASKS if t in chosen]:
        if on_task is not None:
            on_task(task)
        results[task] = evaluate_task(model, task, data_dir, settings, batch_size, skip_bad_lines).as_dict()
    return results
