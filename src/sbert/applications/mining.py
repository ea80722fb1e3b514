"""Paraphrase mining: the most similar pairs among N sentences, without an N × N matrix in memory.

Every sentence is searched against all others in chunks (:func:`top_k_chunked`); each keeps its
``top_k`` neighbours, the pairs (i, j) and (j, i) merge into one, and the ``max_pairs`` best remain.
Memory: ``N × (top_k + 1)`` candidates plus one chunk block of scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from sbert.embeddings.search import top_k_chunked
from sbert.embeddings.similarity import ArrayLike

if TYPE_CHECKING:
    from sbert.encoder.model import SentenceEncoder


class Pair(NamedTuple):
    """Two sentence positions (``i < j``) and their similarity."""

    score: float
    i: int
    j: int


def paraphrase_mining(
    sentences_or_embeddings: Sequence[str] | ArrayLike,
    model: SentenceEncoder | None = None,
    top_k: int = 100,
    max_pairs: int = 500_000,
    score_function: str = "cosine",
    query_chunk_size: int = 5000,
    corpus_chunk_size: int = 100_000,
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
) -> list[Pair]:
    """The most similar pairs of sentences, best first.

    Args:
        sentences_or_embeddings: Sentences (then ``model`` encodes them) or their vectors (n, dim).
        model: The encoder for sentences.
        top_k: Neighbours kept per sentence; a pair is found when one of its sentences is among the
            other's ``top_k`` most similar.
        max_pairs: Most pairs returned.
        score_function: ``"cosine"`` or ``"dot"``.
        query_chunk_size: Sentences searched at once.
        corpus_chunk_size: Sentences scored against at once.
        batch_size: Encoding batch size.
        show_progress_bar: Encoding progress bar (default: for 1000 sentences or more).

    Returns:
        :class:`Pair` ``(score, i, j)`` with ``i < j``, by score descending, then ``i``, then ``j``.

    Examples:
        >>> import numpy as np
        >>> vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
        >>> paraphrase_mining(vectors, top_k=1, max_pairs=1)[0][1:]
        (0, 2)
    """
    if top_k < 1 or max_pairs < 1:
        raise ValueError(f"top_k and max_pairs must be at least 1, got {top_k} and {max_pairs}")
    embeddings = _embeddings(sentences_or_embeddings, model, batch_size, show_progress_bar)
    n = len(embeddings)
    if n < 2:
        return []
    # One more than top_k, since each sentence finds itself; it is dropped below.
    scores, ids = top_k_chunked(
        embeddings, embeddings, top_k + 1, score_function, query_chunk_size, corpus_chunk_size
    )
    rows = torch.arange(n).unsqueeze(1).expand_as(ids)
    keep = ids != rows
    # Drop self, then keep at most top_k per row (self may be missing when exact duplicates come first).
    keep &= keep.cumsum(dim=1) <= top_k
    first, second, values = rows[keep].numpy(), ids[keep].numpy(), scores[keep].numpy()
    low, high = np.minimum(first, second), np.maximum(first, second)
    # (i, j) and (j, i) may differ in the last bit: keep the higher score of the two.
    order = np.lexsort((-values, high, low))
    low, high, values = low[order], high[order], values[order]
    unique = np.ones(len(low), dtype=bool)
    unique[1:] = (low[1:] != low[:-1]) | (high[1:] != high[:-1])
    low, high, values = low[unique], high[unique], values[unique]
    best = np.lexsort((high, low, -values))[:max_pairs]
    return [Pair(float(values[k]), int(low[k]), int(high[k])) for k in best]


def _embeddings(
    data: Sequence[str] | ArrayLike,
    model: SentenceEncoder | None,
    batch_size: int,
    show_progress_bar: bool | None,
) -> torch.Tensor:
    if isinstance(data, (np.ndarray, torch.Tensor)):
        tensor = torch.as_tensor(data).float()
        if tensor.dim() != 2:
            raise ValueError(f"embeddings must be (n, dim), got shape {tuple(tensor.shape)}")
        return tensor
    sentences = list(data)
    if model is None:
        raise ValueError("paraphrase_mining got sentences but no model to encode them: pass model=")
    encoded = model.encode(sentences, batch_size=batch_size, show_progress_bar=show_progress_bar)
    return torch.as_tensor(encoded)
