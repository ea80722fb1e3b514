"""Scores for ``/similarity`` and ``/rerank``: cosine of bi-encoder vectors, or a cross-encoder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sbert.server.batcher import InputTooLong
from sbert.server.schemas import APIError


def cosine_scores(query: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Cosine similarity of ``query`` (dim,) to each row of ``others`` (n, dim), as float32 (the
    answer writes the array in one call, :mod:`sbert.server.responses`).

    Examples:
        >>> cosine_scores(np.array([1.0, 0.0]), np.array([[2.0, 0.0], [0.0, 3.0]])).tolist()
        [1.0, 0.0]
    """
    norms = np.linalg.norm(others, axis=1) * np.linalg.norm(query)
    return (others @ query / np.maximum(norms, 1e-12)).astype(np.float32)


def cross_encoder_scores(
    cross_encoder: Any, query: str, documents: Sequence[str], truncate: bool = True, raw: bool = False
) -> np.ndarray:
    """The cross-encoder's score of each ``(query, document)`` pair, float32; runs on the batcher's thread.

    ``raw``: the logit, not the sigmoid of it (TEI's ``raw_scores``).

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
    return np.asarray(cross_encoder.predict(pairs, batch_size=32, apply_activation=not raw), dtype=np.float32)


def ranked(scores: np.ndarray, top_n: int | None = None) -> list[tuple[int, np.floating]]:
    """``(index, score)`` best first, ties in input order, the first ``top_n``; the scores stay numpy
    scalars of the array's type (float32 is written as float32's shortest text).

    Examples:
        >>> [(i, float(s)) for i, s in ranked(np.array([0.2, 0.9, 0.2]), top_n=2)]
        [(1, 0.9), (0, 0.2)]
    """
    scores = np.asarray(scores)
    order = np.argsort(-scores, kind="stable")[:top_n]
    return [(int(i), scores[i]) for i in order]


def no_raw_scores(model_id: str) -> APIError:
    """The 422 for ``raw_scores: true`` without a cross-encoder, in Cohere's body and TEI's alike:
    a bi-encoder's score is a cosine, it has no logit to give raw.

    Examples:
        >>> no_raw_scores("mini").answer(tei=True)[0]
        422
    """
    return APIError(
        422,
        "raw_scores: true needs a cross-encoder (start the server with --cross-encoder DIR); "
        f"{model_id!r} scores by cosine",
        "raw_scores",
    )
