"""Hybrid search: a dense and a sparse result list of each query fused into one ranking.

Two fusions, over the hits each retriever returned for a query (its top ``candidates``):

- **reciprocal-rank fusion** (Cormack, Clarke and Büttcher, SIGIR 2009): a document scores
  ``Σ 1 / (k + rank)`` over the lists it appears in, rank from 1, ``k = 60`` as in the paper. Scores
  are ignored, so lists on different scales (cosine in [-1, 1], SPLADE dot products in the tens)
  fuse without tuning; this is sentence-transformers' ``ReciprocalRankFusionEvaluator`` formula.
- **weighted sum of normalised scores** (convex combination): each list's scores are min-max
  normalised per query over the hits returned, ``(s - min) / (max - min)`` (all 1.0 when every
  hit scores the same), and a document scores ``Σ weight_i × normalised_i``; a list it is missing
  from adds 0.

Equal fused scores keep the order in which documents first appear, the first list (dense) before
the second, as sentence-transformers' evaluator sorts them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sbert.embeddings.search import Hit

FUSIONS = ("rrf", "weighted")
RRF_K = 60
DEFAULT_CANDIDATES = 100


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Hit]], k: int = RRF_K, top_k: int | None = None
) -> list[Hit]:
    """One query's ranked lists fused by reciprocal rank: ``Σ 1 / (k + rank)``, rank from 1.

    Examples:
        >>> dense = [Hit(1, 0.9), Hit(2, 0.8)]
        >>> sparse = [Hit(2, 14.0), Hit(3, 9.0)]
        >>> [(hit.corpus_id, round(hit.score, 5)) for hit in reciprocal_rank_fusion([dense, sparse])]
        [(2, 0.03252), (1, 0.01639), (3, 0.01613)]
    """
    if k < 0:
        raise ValueError(f"the RRF constant k must be 0 or more, got {k}")
    fused: dict[int, float] = {}
    for hits in rankings:
        for rank, hit in enumerate(hits, start=1):
            fused[hit.corpus_id] = fused.get(hit.corpus_id, 0.0) + 1.0 / (k + rank)
    return _best(fused, top_k)


def min_max(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` with scores mapped to [0, 1] by ``(s - min) / (max - min)``; all 1.0 when they are equal.

    Examples:
        >>> [hit.score for hit in min_max([Hit(7, 3.0), Hit(8, 2.0), Hit(9, 1.0)])]
        [1.0, 0.5, 0.0]
    """
    if not hits:
        return []
    scores = [hit.score for hit in hits]
    low, high = min(scores), max(scores)
    if high == low:
        return [Hit(hit.corpus_id, 1.0) for hit in hits]
    return [Hit(hit.corpus_id, (hit.score - low) / (high - low)) for hit in hits]


def weighted_fusion(
    rankings: Sequence[Sequence[Hit]], weights: Sequence[float] | None = None, top_k: int | None = None
) -> list[Hit]:
    """One query's lists fused by a weighted sum of min-max normalised scores (equal weights by default).

    Examples:
        >>> dense = [Hit(1, 0.9), Hit(2, 0.8), Hit(4, 0.5)]
        >>> sparse = [Hit(2, 14.0), Hit(3, 9.0), Hit(1, 4.0)]
        >>> [(hit.corpus_id, round(hit.score, 3)) for hit in weighted_fusion([dense, sparse], [0.5, 0.5])]
        [(2, 0.875), (1, 0.5), (3, 0.25), (4, 0.0)]
    """
    weights = [1.0 / len(rankings)] * len(rankings) if weights is None else list(weights)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights given for {len(rankings)} result lists")
    if not all(math.isfinite(weight) and weight >= 0 for weight in weights) or not any(weights):
        raise ValueError(f"fusion weights must be finite, 0 or more and not all 0, got {weights}")
    fused: dict[int, float] = {}
    for weight, hits in zip(weights, rankings, strict=True):
        for hit in min_max(hits):
            fused[hit.corpus_id] = fused.get(hit.corpus_id, 0.0) + weight * hit.score
    return _best(fused, top_k)


def fuse(
    dense: Sequence[Sequence[Hit]],
    sparse: Sequence[Sequence[Hit]],
    fusion: str = "rrf",
    *,
    top_k: int | None = None,
    k: int = RRF_K,
    weights: Sequence[float] = (0.5, 0.5),
) -> list[list[Hit]]:
    """Every query's dense and sparse hits fused (``fusion`` ``"rrf"`` or ``"weighted"``), best first.

    ``weights`` are (dense, sparse) for ``"weighted"``; ``k`` is the RRF constant.

    Examples:
        >>> fuse([[Hit(1, 0.9), Hit(2, 0.5)]], [[Hit(2, 8.0), Hit(1, 1.0)]], "weighted", weights=(0.3, 0.7))
        [[Hit(corpus_id=2, score=0.7), Hit(corpus_id=1, score=0.3)]]
    """
    if fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
    if len(dense) != len(sparse):
        raise ValueError(
            f"{len(dense)} dense result lists but {len(sparse)} sparse ones: one of each per query"
        )
    if fusion == "rrf":
        return [reciprocal_rank_fusion([d, s], k, top_k) for d, s in zip(dense, sparse, strict=True)]
    return [weighted_fusion([d, s], weights, top_k) for d, s in zip(dense, sparse, strict=True)]


class HybridIndex:
    """A dense :class:`~sbert.index.VectorIndex` and a :class:`~sbert.index.sparse_index.SparseIndex` of
    the same corpus (the same corpus ids), searched together and fused.

    Args:
        dense: The dense index.
        sparse: The sparse index.
        fusion: ``"rrf"`` (default) or ``"weighted"``.
        candidates: Hits taken from each index per query before fusing (at least ``top_k``).
        k: The RRF constant.
        weights: (dense, sparse) weights of ``"weighted"``.

    Examples:
        >>> import numpy as np, scipy.sparse
        >>> from sbert.index import VectorIndex
        >>> from sbert.index.sparse_index import SparseIndex
        >>> dense = VectorIndex.build(np.eye(3, dtype="float32"), kind="flat")
        >>> sparse = SparseIndex.build(scipy.sparse.csr_matrix(np.eye(3)[::-1]))
        >>> hybrid = HybridIndex(dense, sparse)
        >>> [hit.corpus_id for hit in hybrid.search(np.eye(3)[:1], np.eye(3)[:1], top_k=3)[0]]
        [0, 2, 1]
    """

    def __init__(
        self,
        dense: Any,
        sparse: Any,
        fusion: str = "rrf",
        candidates: int = DEFAULT_CANDIDATES,
        k: int = RRF_K,
        weights: Sequence[float] = (0.5, 0.5),
    ) -> None:
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
        if candidates < 1:
            raise ValueError(f"candidates must be at least 1, got {candidates}")
        self.dense, self.sparse, self.fusion = dense, sparse, fusion
        self.candidates, self.k, self.weights = candidates, k, tuple(weights)

    def search(self, dense_queries: Any, sparse_queries: Any, top_k: int = 10) -> list[list[Hit]]:
        """The fused ``top_k`` of each query; ``dense_queries`` (queries, dim) and ``sparse_queries``
        (queries, vocabulary) are the same queries encoded by each index's model."""
        wanted = max(self.candidates, top_k)
        dense = self.dense.search(dense_queries, top_k=min(wanted, len(self.dense)))
        sparse = self.sparse.search(sparse_queries, top_k=min(wanted, len(self.sparse)))
        return fuse(dense, sparse, self.fusion, top_k=top_k, k=self.k, weights=self.weights)


def _best(fused: dict[int, float], top_k: int | None) -> list[Hit]:
    # sorted() is stable: equal scores keep first-appearance order (dict insertion order).
    ordered = sorted(fused.items(), key=lambda item: item[1], reverse=True)
    return [Hit(corpus_id, score) for corpus_id, score in ordered[:top_k]]
