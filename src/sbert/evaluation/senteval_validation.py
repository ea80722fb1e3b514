"""SentEval's default validation protocol for the transfer tasks, on top of its logistic regression.

Follows ``senteval/tools/validation.py`` of facebookresearch/SentEval with ``usepytorch=True`` and
``kfold=10`` (the setting SentEval's README recommends and the paper's Table 5 used):

- :func:`inner_kfold` (``InnerKFoldClassifier``; MR, CR, SUBJ, MPQA): 10 stratified outer folds; in
  each, the L2 strength is the one with the best mean accuracy over 10 stratified inner folds of the
  nine training folds (each inner fit stops early on its inner test fold); the final fit on the nine
  folds stops early on a 5 % validation split; the figure is the mean of the ten fold accuracies.
- :func:`kfold` (``KFoldClassifier``; TREC, MRPC): the L2 strength by 10-fold cross-validation on
  train; one final fit on train (5 % split for early stopping), scored on test.
- :func:`split` (``SplitClassifier``; SST-2): one fit per L2 strength on train, stopped early and
  chosen on dev, scored on test.

L2 grid ``10^-5 .. 10^-2``, seed 1111 for every split and fit; accuracies rounded to 2 decimals at
the same places as SentEval, so that ties between strengths are broken the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.model_selection import StratifiedKFold

from sbert.evaluation.logistic import ClassifierSettings, Fit, FittedModels, fit_logistic

Split = tuple[np.ndarray, np.ndarray]  # features (n, dim), class indices (n,)


@dataclass(frozen=True)
class SentEvalSettings:
    """SentEval's protocol settings (``params_senteval`` and ``params['classifier']``).

    Attributes:
        folds: ``kfold``: outer and inner cross-validation folds.
        l2_grid: Weight decays tried (SentEval's ``[10**t for t in range(-5, -1)]``).
        validation_split: Share of the training rows held out to stop the final fits early.
        seed: Seed of the folds (the classifier's own seed is in ``classifier``).
        classifier: The logistic regression's settings.
    """

    folds: int = 10
    l2_grid: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2)
    validation_split: float = 0.05
    seed: int = 1111
    classifier: ClassifierSettings = field(default_factory=ClassifierSettings)

    def as_dict(self) -> dict[str, object]:
        return {**self.__dict__, "classifier": self.classifier.__dict__}


@dataclass
class ValidationResult:
    """Test accuracy × 100 (rounded as SentEval), the validation accuracy behind the choice, the
    chosen L2 strengths (one per outer fold, or one) and the test predictions (``kfold``, ``split``)."""

    accuracy: float
    dev_accuracy: float
    chosen_l2: list[float]
    predicted: np.ndarray | None = None


def _folds(labels: np.ndarray, settings: SentEvalSettings) -> list[tuple[np.ndarray, np.ndarray]]:
    splitter = StratifiedKFold(n_splits=settings.folds, shuffle=True, random_state=settings.seed)
    return list(splitter.split(np.zeros(len(labels)), labels))


def _grid_scores(models: FittedModels, fits: slice) -> list[float]:
    """Per strength: mean validation accuracy × 100 over ``fits``, rounded as SentEval does."""
    return [
        round(100 * float(np.mean(models.dev_accuracy[fits, j])), 2)
        for j in range(models.dev_accuracy.shape[1])
    ]


def _fit_grid(
    x: np.ndarray, y: np.ndarray, classes: int, fits: list[Fit], settings: SentEvalSettings
) -> FittedModels:
    grid = np.tile(np.array(settings.l2_grid), (len(fits), 1))  # (fits, strengths)
    return fit_logistic(x, y, classes, fits, grid, settings.classifier)


def _fit_final(
    x: np.ndarray,
    y: np.ndarray,
    classes: int,
    rows: list[np.ndarray],
    l2: list[float],
    settings: SentEvalSettings,
) -> FittedModels:
    seed = settings.classifier.seed
    fits = [Fit.with_split(part, settings.validation_split, seed) for part in rows]
    return fit_logistic(x, y, classes, fits, np.array(l2)[:, None], settings.classifier)


def inner_kfold(x: np.ndarray, y: np.ndarray, classes: int, settings: SentEvalSettings) -> ValidationResult:
    """SentEval's ``InnerKFoldClassifier``: nested cross-validation over one labelled set.

    Examples:
        >>> x = np.repeat(np.eye(2, dtype=np.float32), 30, axis=0)
        >>> quick = SentEvalSettings(folds=3, classifier=ClassifierSettings(learning_rate=0.05))
        >>> inner_kfold(x, np.repeat([0, 1], 30), 2, quick).accuracy
        100.0
    """
    seed = settings.classifier.seed
    outer = _folds(y, settings)
    inner = [[(train[a], train[b]) for a, b in _folds(y[train], settings)] for train, _ in outer]
    fits = [Fit.with_dev(a, b, seed) for folds in inner for a, b in folds]
    models = _fit_grid(x, y, classes, fits, settings)
    chosen, dev = [], []
    for k in range(len(outer)):
        scores = _grid_scores(models, slice(k * settings.folds, (k + 1) * settings.folds))
        chosen.append(settings.l2_grid[int(np.argmax(scores))])
        dev.append(max(scores))
    final = _fit_final(x, y, classes, [train for train, _ in outer], chosen, settings)
    tests = [round(100 * final.accuracy(k, 0, x[test], y[test]), 2) for k, (_, test) in enumerate(outer)]
    return ValidationResult(round(float(np.mean(tests)), 2), round(float(np.mean(dev)), 2), chosen)


def kfold(train: Split, test: Split, classes: int, settings: SentEvalSettings) -> ValidationResult:
    """SentEval's ``KFoldClassifier``: L2 strength by cross-validation on train, scored on test."""
    (x, y), (test_x, test_y) = train, test
    seed = settings.classifier.seed
    models = _fit_grid(x, y, classes, [Fit.with_dev(a, b, seed) for a, b in _folds(y, settings)], settings)
    scores = _grid_scores(models, slice(None))
    best = settings.l2_grid[int(np.argmax(scores))]
    final = _fit_final(x, y, classes, [np.arange(len(y))], [best], settings)
    accuracy = round(100 * final.accuracy(0, 0, test_x, test_y), 2)
    return ValidationResult(accuracy, max(scores), [best], final.predict(0, 0, test_x))


def split(
    train: Split, dev: Split, test: Split, classes: int, settings: SentEvalSettings
) -> ValidationResult:
    """SentEval's ``SplitClassifier``: L2 strength chosen on dev, scored on test.

    SentEval refits the chosen strength from the same seed, which repeats the same fit; its weights
    are reused here.
    """
    rows = np.arange(len(train[1]) + len(dev[1]))
    x, y = np.concatenate([train[0], dev[0]]), np.concatenate([train[1], dev[1]])
    fit = Fit.with_dev(rows[: len(train[1])], rows[len(train[1]) :], settings.classifier.seed)
    models = _fit_grid(x, y, classes, [fit], settings)
    scores = [round(100 * float(accuracy), 2) for accuracy in models.dev_accuracy[0]]
    best = int(np.argmax(scores))
    accuracy = round(100 * models.accuracy(0, best, *test), 2)
    return ValidationResult(
        accuracy, scores[best], [settings.l2_grid[best]], models.predict(0, best, test[0])
    )
