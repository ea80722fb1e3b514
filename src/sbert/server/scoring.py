"""Scores for ``/similarity`` and ``/rerank``: cosine of bi-encoder vectors, and the ranking; a
cross-encoder's scores come from the batcher (:mod:`sbert.server.pair_jobs`)."""

from __future__ import annotations

import numpy as np

from sbert.server.errors import APIError


def cosine_scores(query: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Cosine similarity of ``query`` (dim,) to each row of ``others`` (n, dim), as float32 (the
    answer writes the array in one call, :mod:`sbert.server.responses`).

    Examples:
        >>> cosine_scores(np.array([1.0, 0.0]), np.array([[2.0, 0.0], [0.0, 3.0]])).tolist()
        [1.0, 0.0]
    """
    norms = np.linalg.norm(others, axis=1) * np.linalg.norm(query)
    return (others @ query / np.maximum(norms, 1e-12)).astype(np.float32)


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
