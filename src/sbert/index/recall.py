"""Recall@k of an index against exact search."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sbert.embeddings.search import Hit, as_numpy, semantic_search
from sbert.embeddings.similarity import ArrayLike
from sbert.index.vector_index import VectorIndex


def recall_at_k(
    index: VectorIndex,
    query_embeddings: ArrayLike,
    k: int = 10,
    exact: Sequence[Sequence[Hit]] | None = None,
    corpus_embeddings: ArrayLike | None = None,
) -> float:
    """Share of the exact top-k that the index finds in its top-k, averaged over the queries.

    Args:
        index: The index to judge.
        query_embeddings: (queries, dim).
        k: Results compared per query.
        exact: Exact results per query (from :func:`semantic_search`), if already computed.
        corpus_embeddings: Otherwise the corpus, searched exactly here; default: the index's own vectors.

    Examples:
        >>> import numpy as np
        >>> vectors = np.random.default_rng(0).normal(size=(200, 8)).astype("float32")
        >>> recall_at_k(VectorIndex.build(vectors, kind="flat"), vectors[:5], k=3)
        1.0
    """
    if exact is None:
        corpus = index.vectors() if corpus_embeddings is None else as_numpy(corpus_embeddings)
        ids = index.ids if corpus_embeddings is None else np.arange(len(corpus))
        exact = [
            [Hit(int(ids[h.corpus_id]), h.score) for h in row]
            for row in semantic_search(query_embeddings, corpus, top_k=k, score_function=index.metric)
        ]
    found = index.search(query_embeddings, top_k=k)
    if len(found) != len(exact):
        raise ValueError(f"{len(exact)} exact result lists for {len(found)} queries")
    recalls = []
    for approx_row, exact_row in zip(found, exact):
        truth = {h.corpus_id for h in exact_row[:k]}
        recalls.append(len(truth & {h.corpus_id for h in approx_row}) / max(len(truth), 1))
    return float(np.mean(recalls))
