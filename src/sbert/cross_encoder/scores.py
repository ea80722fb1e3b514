"""sentence-transformers' ``CrossEncoder.predict`` and ``rank`` around sbert's logits: which inputs are
one pair, the activation, and the shape and type of what comes back."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sbert.base.empty import empty_answer

Pair = tuple[str, str]


def as_pairs(inputs: Any) -> tuple[list[Pair], bool]:
    """The pairs of ``inputs`` and whether it was a single pair, by sentence-transformers' rule: a
    list or tuple whose first item is not itself a list or tuple is one pair.

    Raises:
        TypeError: an item that is not two strings (the message names its index).

    Examples:
        >>> as_pairs(("a question", "a passage"))
        ([('a question', 'a passage')], True)
        >>> as_pairs([["q", "d1"], ["q", "d2"]])[1]
        False
    """
    if isinstance(inputs, np.ndarray):
        inputs = inputs.tolist()
    if isinstance(inputs, str):
        raise TypeError(f"predict takes (str, str) pairs or a list of them, not the string {inputs!r:.80}")
    if not isinstance(inputs, Iterable):
        raise TypeError(
            f"inputs must be a (str, str) pair or a list of such pairs, got {type(inputs).__name__} {inputs!r:.80}"
        )
    items = list(inputs)
    single = isinstance(inputs, (list, tuple)) and bool(items) and not isinstance(items[0], (list, tuple))
    if single:
        items = [items]
    for index, pair in enumerate(items):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
            where = "the pair" if single else f"pairs[{index}]"
            raise TypeError(f"{where} must be a (str, str) pair, got {pair!r:.80}")
    return [(a, b) for a, b in items], single


def activated(
    logits: Tensor, activation: Callable[[Tensor], Tensor] | None, apply_softmax: bool | None
) -> Tensor:
    """Scores from (n, num_labels) logits, as sentence-transformers computes them: the activation,
    then (n,) for one label, then a softmax over the labels where asked."""
    scores = activation(logits) if activation is not None else logits
    if scores.ndim > 1 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if apply_softmax and scores.ndim > 1:
        scores = torch.softmax(scores, dim=1)
    return scores


def converted(
    scores: Tensor, single: bool, convert_to_numpy: bool, convert_to_tensor: bool, device: torch.device
) -> Any:
    """``predict``'s answer: a tensor (on the model's device), a numpy array or a list of tensors;
    for a single pair, its own score (or row of label scores)."""
    if not single and len(scores) == 0:  # sentence-transformers' (0,), not (0, num_labels)
        return empty_answer(convert_to_tensor, convert_to_numpy, device=device)
    out: Any
    if convert_to_tensor:
        out = scores.to(device)
    elif convert_to_numpy:
        out = scores.numpy()
    else:
        out = list(scores)
    return out[0] if single else out


def ranked(
    scores: Sequence[float], documents: Sequence[Any], top_k: int | None, return_documents: bool
) -> list[dict[str, Any]]:
    """sentence-transformers' ``rank`` answer: ``{"corpus_id", "score"[, "text"]}`` best first (ties:
    earlier first), the first ``top_k``.

    Examples:
        >>> ranked([0.2, 0.9, 0.5], ["a", "b", "c"], top_k=2, return_documents=True)
        [{'corpus_id': 1, 'score': 0.9, 'text': 'b'}, {'corpus_id': 2, 'score': 0.5, 'text': 'c'}]
    """
    if top_k is not None and top_k < 0:
        raise ValueError(f"top_k must be at least 0, got {top_k}")
    results: list[dict[str, Any]] = []
    for index, score in enumerate(scores):
        results.append({"corpus_id": index, "score": float(score)})
        if return_documents:
            results[-1]["text"] = documents[index]
    results.sort(key=lambda result: result["score"], reverse=True)
    return results[:top_k]
