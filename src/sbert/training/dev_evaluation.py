"""Evaluation during training: the evaluator run on the model being trained, the way a run needs it."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from torch import nn

from sbert.base.contracts import Evaluator
from sbert.base.modes import evaluating


def evaluate_during_training(
    evaluator: Evaluator[Any], model: Any, metric: str, show_progress_bar: bool
) -> tuple[dict[str, float], float]:
    """The evaluator's scores of ``model``, and the one of ``metric`` among them.

    The weights change between evaluations, so a compiled OpenVINO engine would be rebuilt each time
    (seconds) to save less than that: ``model`` is evaluated on PyTorch unless it asked for a backend
    itself. Without a progress bar for training (``show_progress_bar``), the evaluator shows none
    either. It runs in eval mode (no dropout: the score of these weights, not of a random
    sub-network), even where the evaluator calls the model's ``forward`` itself. All three are put
    back afterwards.

    Raises:
        KeyError: the scores hold no ``metric`` (the message lists their keys).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> class Size:
        ...     primary_metric = "dim"
        ...     def __call__(self, model: SentenceEncoder) -> dict[str, float]:
        ...         return {"dim": float(model.encode(["A man eats."]).shape[1])}
        >>> evaluate_during_training(Size(), SentenceEncoder.from_pretrained(), "dim", False)
        ({'dim': 384.0}, 384.0)
    """
    asked = getattr(model, "requested_backend", None)
    bars = getattr(evaluator, "show_progress_bar", None)
    if asked == "auto":
        model.requested_backend = "torch"
    if not show_progress_bar and hasattr(evaluator, "show_progress_bar"):
        evaluator.show_progress_bar = False  # type: ignore[attr-defined]
    try:
        with evaluating(model) if isinstance(model, nn.Module) else nullcontext():
            scores = evaluator(model)
    finally:
        if asked == "auto":
            model.requested_backend = asked
        if hasattr(evaluator, "show_progress_bar"):
            evaluator.show_progress_bar = bars  # type: ignore[attr-defined]
    if metric not in scores:
        raise KeyError(f"the evaluator returned no {metric!r} (keys: {', '.join(scores)})")
    return scores, float(scores[metric])
