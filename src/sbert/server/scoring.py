"""Scores for ``/similarity`` and ``/rerank``: cosine of bi-encoder vectors, or a cross-encoder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sbert.server.batcher import InputTooLong


def cosine_scores(query: np.ndarray, others: np.ndarray) -> list[float]:
    """Cosine similarity of ``query`` (dim,) to each row of ``others`` (n, dim).

    Examples:
        >>> cosine_scores(np.array([1.0, 0.0]), np.array([[2.0, 0.0], [0.0, 3.0]]))
        [1.0, 0.0]
    """
    norms = np.linalg.norm(others, axis=1) * np.linalg.norm(query)
    return (others @ query / np.maximum(norms, 1e-12)).astype(float).tolist()


def cross_encoder_scores(
    cross_encoder: Any, query: str, documents: Sequence[str], truncate: bool = True
) -> list[float]:
    """The cross-encoder's score of each ``(query, document)`` pair; runs on the batcher's thread.

    Raises:
        InputTooLong: ``truncate=False`` and a pair is longer than the model's limit (the index is
            the document's).
    """
    pairs = [(query, document) for document in documents]
    if not truncate:
        ids = cross_encoder.tokenizer(
            [query] * len(documents), list(documents), truncation=False, verbose=False
        )["input_ids"]
        for index, row in enumerate(ids):
            if len(row) > cross_encoder.max_seq_length:
                raise InputTooLong(index, len(row), cross_encoder.max_seq_length)
    return cross_encoder.predict(pairs, batch_size=32).astype(float).tolist()


def ranked(scores: Sequence[float], top_n: int | None = None) -> list[tuple[int, float]]:
    """``(index, score)`` best first, ties in input order, the first ``top_n``.

    Examples:
        >>> ranked([0.2, 0.9, 0.2], top_n=2)
        [(1, 0.9), (0, 0.2)]
    """
    order = np.argsort(-np.asarray(scores), kind="stable")[:top_n]
    return [(int(i), float(scores[i])) for i in order]
