"""``sentence_transformers.util`` under sbert: the same names, arguments and result structures.

Scores are torch tensors (numpy or lists in, tensors out, as sentence-transformers returns them);
searches return ``[{"corpus_id": ..., "score": ...}]`` lists, paraphrase mining ``[score, i, j]``
lists, community detection lists of indices. The work is sbert's own (:mod:`sbert.embeddings.similarity`,
:mod:`sbert.applications`); sbert's functions there return numpy for numpy and named tuples.

Examples:
    >>> import numpy as np
    >>> from sbert import util
    >>> util.cos_sim(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 2.0]]))
    tensor([[1., 0.]])
    >>> hits = util.semantic_search(np.array([[1.0, 0.1]]), np.array([[0.0, 1.0], [1.0, 0.0]]), top_k=1)
    >>> hits[0][0]["corpus_id"], round(hits[0][0]["score"], 4)
    (1, 0.995)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from sbert.embeddings.quantization import quantize_embeddings
from sbert.embeddings.similarity import (
    cos_sim,
    dot_score,
    euclidean_sim,
    manhattan_sim,
    pairwise_cos_sim,
    pairwise_dot_score,
    pairwise_euclidean_sim,
    pairwise_manhattan_sim,
    score_input,
)

__all__ = [
    "community_detection",
    "cos_sim",
    "dot_score",
    "euclidean_sim",
    "manhattan_sim",
    "normalize_embeddings",
    "pairwise_cos_sim",
    "pairwise_dot_score",
    "pairwise_euclidean_sim",
    "pairwise_manhattan_sim",
    "paraphrase_mining",
    "paraphrase_mining_embeddings",
    "quantize_embeddings",
    "semantic_search",
    "truncate_embeddings",
]


def normalize_embeddings(embeddings: Tensor) -> Tensor:
    """Every row scaled to unit length."""
    return torch.nn.functional.normalize(score_input(embeddings), p=2, dim=1)


def truncate_embeddings(embeddings: Any, truncate_dim: int | None) -> Any:
    """The first ``truncate_dim`` dimensions, not rescaled (sentence-transformers' meaning; sbert's
    :func:`sbert.embeddings.truncation.truncate_embeddings` rescales to unit length)."""
    return embeddings[..., :truncate_dim]


def _metric(score_function: Callable[..., Tensor]) -> str | None:
    """sbert's name of a score function, when it is cosine or dot (ST's or ours); else ``None``."""
    name = getattr(score_function, "__name__", "")
    return {"cos_sim": "cosine", "dot_score": "dot"}.get(name)


def semantic_search(
    query_embeddings: Any,
    corpus_embeddings: Any,
    query_chunk_size: int = 100,
    corpus_chunk_size: int = 500000,
    top_k: int = 10,
    score_function: Callable[..., Tensor] = cos_sim,
) -> list[list[dict[str, int | float]]]:
    """The ``top_k`` best corpus vectors of every query, best first: ``[[{"corpus_id", "score"}, ...], ...]``.

    Examples:
        >>> import numpy as np
        >>> semantic_search(np.eye(2), np.array([[0.0, 3.0], [1.0, 0.0]]), top_k=2)[1]
        [{'corpus_id': 0, 'score': 1.0}, {'corpus_id': 1, 'score': 0.0}]
    """
    from sbert.embeddings.search import semantic_search as exact_search

    queries, corpus = score_input(query_embeddings), score_input(corpus_embeddings)
    metric = _metric(score_function)
    if metric is not None:
        rows = exact_search(queries, corpus, top_k, metric, query_chunk_size, corpus_chunk_size)
        return [[{"corpus_id": hit.corpus_id, "score": hit.score} for hit in row] for row in rows]
    results = []
    for start in range(0, len(queries), query_chunk_size):
        scores = score_function(queries[start : start + query_chunk_size], corpus)  # (chunk, corpus)
        values, ids = torch.topk(scores, min(top_k, scores.shape[1]), dim=1)
        for row_ids, row_values in zip(ids.tolist(), values.tolist()):
            results.append([{"corpus_id": i, "score": s} for i, s in zip(row_ids, row_values)])
    return results


def paraphrase_mining(
    model: Any,
    sentences: Sequence[str],
    show_progress_bar: bool = False,
    batch_size: int = 32,
    query_chunk_size: int = 5000,
    corpus_chunk_size: int = 100000,
    max_pairs: int = 500000,
    top_k: int = 100,
    score_function: Callable[..., Tensor] = cos_sim,
    truncate_dim: int | None = None,
    prompt_name: str | None = None,
    prompt: str | None = None,
) -> list[list[float | int]]:
    """The most similar pairs of ``sentences``: ``[score, i, j]`` lists (``i < j``), best first."""
    embeddings = model.encode(
        sentences,
        show_progress_bar=show_progress_bar,
        batch_size=batch_size,
        convert_to_tensor=True,
        truncate_dim=truncate_dim,
        prompt_name=prompt_name,
        prompt=prompt,
    )
    return paraphrase_mining_embeddings(
        embeddings, query_chunk_size, corpus_chunk_size, max_pairs, top_k, score_function
    )


def paraphrase_mining_embeddings(
    embeddings: Any,
    query_chunk_size: int = 5000,
    corpus_chunk_size: int = 100000,
    max_pairs: int = 500000,
    top_k: int = 100,
    score_function: Callable[..., Tensor] = cos_sim,
) -> list[list[float | int]]:
    """:func:`paraphrase_mining` of vectors (n, dim).

    Examples:
        >>> import numpy as np
        >>> [score, i, j] = paraphrase_mining_embeddings(np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]]))[0]
        >>> round(score, 4), i, j
        (0.9939, 0, 2)
    """
    from sbert.applications.mining import paraphrase_mining as mine

    metric = _metric(score_function)
    if metric is None:
        raise ValueError(
            f"score_function {getattr(score_function, '__name__', score_function)!r}: sbert mines "
            "with cos_sim or dot_score"
        )
    pairs = mine(score_input(embeddings), None, top_k, max_pairs, metric, query_chunk_size, corpus_chunk_size)
    return [[pair.score, pair.i, pair.j] for pair in pairs]


def community_detection(
    embeddings: Any,
    threshold: float = 0.75,
    min_community_size: int = 10,
    batch_size: int = 1024,
    show_progress_bar: bool = False,
) -> list[list[int]]:
    """Communities of vectors with cosine ≥ ``threshold`` to a centre, largest first, centre first.

    Examples:
        >>> import numpy as np
        >>> community_detection(np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]]), 0.9, min_community_size=2)
        [[0, 1]]
    """
    from sbert.applications.clustering import community_detection as communities

    if len(embeddings) == 0:
        return []
    return communities(score_input(embeddings), threshold, min_community_size, batch_size)
