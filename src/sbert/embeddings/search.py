"""Exact semantic search: the corpus sentences closest to each query, in bounded memory.

Scores are computed one (query chunk × corpus chunk) block at a time and only the running top-k of
each query is kept, so memory grows with ``query_chunk_size × corpus_chunk_size`` and not with the
corpus size.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from sbert.embeddings.similarity import ArrayLike

SCORE_FUNCTIONS = ("cosine", "dot")
QUERY_CHUNK_SIZE = 100
CORPUS_CHUNK_SIZE = 100_000


class Hit(NamedTuple):
    """One search result: the corpus position (or id) and its similarity to the query."""

    corpus_id: int
    score: float


def semantic_search(
    query_embeddings: ArrayLike,
    corpus_embeddings: ArrayLike,
    top_k: int = 10,
    score_function: str = "cosine",
    query_chunk_size: int = QUERY_CHUNK_SIZE,
    corpus_chunk_size: int = CORPUS_CHUNK_SIZE,
) -> list[list[Hit]]:
    """The ``top_k`` most similar corpus vectors of every query, exactly.

    Args:
        query_embeddings: (queries, dim), or one query (dim,).
        corpus_embeddings: (corpus, dim).
        top_k: Results per query; larger than the corpus gives every corpus vector.
        score_function: ``"cosine"`` or ``"dot"``.
        query_chunk_size: Queries scored at once.
        corpus_chunk_size: Corpus vectors scored at once.

    Returns:
        One list per query of :class:`Hit` ``(corpus_id, score)``, best first; equal scores are
        ordered by corpus id, lower first, so results do not depend on the chunk sizes.

    Raises:
        ValueError: ``top_k`` < 1, an empty corpus, or query and corpus dimensions that differ.

    Examples:
        >>> import numpy as np
        >>> corpus = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> semantic_search(np.array([[1.0, 0.1]]), corpus, top_k=2)[0][0].corpus_id
        0
    """
    scores, ids = top_k_chunked(
        query_embeddings, corpus_embeddings, top_k, score_function, query_chunk_size, corpus_chunk_size
    )
    return [
        [Hit(int(i), float(s)) for i, s in zip(row_ids, row_scores)]
        for row_ids, row_scores in zip(ids.tolist(), scores.tolist())
    ]


def top_k_chunked(
    query_embeddings: ArrayLike,
    corpus_embeddings: ArrayLike,
    top_k: int,
    score_function: str = "cosine",
    query_chunk_size: int = QUERY_CHUNK_SIZE,
    corpus_chunk_size: int = CORPUS_CHUNK_SIZE,
) -> tuple[Tensor, Tensor]:
    """Tensor form of :func:`semantic_search`: scores and corpus ids, each (queries, min(top_k, corpus))."""
    queries, corpus = _as_matrix(query_embeddings, "query"), _as_matrix(corpus_embeddings, "corpus")
    _check_search(queries, corpus, top_k, score_function)
    if query_chunk_size < 1 or corpus_chunk_size < 1:
        raise ValueError(f"chunk sizes must be at least 1, got {query_chunk_size} and {corpus_chunk_size}")
    k = min(top_k, len(corpus))
    all_scores = torch.empty((len(queries), k), dtype=torch.float32)
    all_ids = torch.empty((len(queries), k), dtype=torch.long)
    for q_start in range(0, len(queries), query_chunk_size):
        query_chunk = _prepare(queries[q_start : q_start + query_chunk_size], score_function)
        best_scores = torch.empty((len(query_chunk), 0))
        best_ids = torch.empty((len(query_chunk), 0), dtype=torch.long)
        for c_start in range(0, len(corpus), corpus_chunk_size):
            corpus_chunk = _prepare(corpus[c_start : c_start + corpus_chunk_size], score_function)
            block = query_chunk @ corpus_chunk.T  # (query chunk, corpus chunk)
            chunk_scores, chunk_ids = top_k_rows(block, k)
            # Earlier chunks hold lower ids: a stable sort of [best, chunk] keeps lower ids first on ties.
            merged_scores = torch.cat([best_scores, chunk_scores], dim=1)
            merged_ids = torch.cat([best_ids, chunk_ids + c_start], dim=1)
            order = torch.sort(merged_scores, dim=1, descending=True, stable=True).indices[:, :k]
            best_scores, best_ids = merged_scores.gather(1, order), merged_ids.gather(1, order)
        all_scores[q_start : q_start + len(query_chunk)] = best_scores
        all_ids[q_start : q_start + len(query_chunk)] = best_ids
    return all_scores, all_ids


def top_k_rows(scores: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The k largest values of each row and their column, best first, lower column first on ties.

    ``torch.topk`` alone picks an arbitrary member among values tied with the k-th; rows where such a
    tie exists are sorted in full (stable), which is rare for real embeddings.
    """
    k = min(k, scores.shape[1])
    values, columns = torch.topk(scores, k, dim=1)  # (rows, k), descending
    # Sort the chosen columns by (score desc, column asc): columns ascending first, then a stable sort.
    by_column = torch.sort(columns, dim=1).indices
    values, columns = values.gather(1, by_column), columns.gather(1, by_column)
    order = torch.sort(values, dim=1, descending=True, stable=True).indices
    values, columns = values.gather(1, order), columns.gather(1, order)
    kth = values[:, -1:]  # (rows, 1)
    tied_rows = ((scores >= kth).sum(dim=1) > k).nonzero().flatten()
    for row in tied_rows.tolist():
        full = torch.sort(scores[row], descending=True, stable=True)
        values[row], columns[row] = full.values[:k], full.indices[:k]
    return values, columns


def _as_matrix(embeddings: ArrayLike, side: str) -> Tensor:
    tensor = torch.as_tensor(embeddings)
    if tensor.dim() == 1:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() != 2:
        raise ValueError(f"{side} embeddings must be (n, dim), got shape {tuple(tensor.shape)}")
    return tensor


def _check_search(queries: Tensor, corpus: Tensor, top_k: int, score_function: str) -> None:
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if score_function not in SCORE_FUNCTIONS:
        raise ValueError(
            f"unknown score_function {score_function!r}; choose one of {', '.join(SCORE_FUNCTIONS)}"
        )
    if len(corpus) == 0:
        raise ValueError("the corpus is empty: there is nothing to search")
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(
            f"query embeddings have dimension {queries.shape[1]} but corpus embeddings have dimension "
            f"{corpus.shape[1]}: encode both with the same model"
        )


def _prepare(chunk: Tensor, score_function: str) -> Tensor:
    """A float32 copy of one chunk, unit length for cosine (done per chunk: no full-corpus copy)."""
    chunk = chunk.float()
    if score_function == "cosine":
        chunk = torch.nn.functional.normalize(chunk, p=2, dim=1)
    return chunk


def as_numpy(embeddings: ArrayLike) -> np.ndarray:
    """A float32 numpy view or copy of embeddings."""
    if isinstance(embeddings, Tensor):
        return embeddings.detach().cpu().float().numpy()
    return np.asarray(embeddings, dtype=np.float32)
