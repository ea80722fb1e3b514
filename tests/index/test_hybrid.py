"""Hybrid fusion: hand-computed RRF and weighted sums, and sentence-transformers' RRF evaluator as the oracle."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

from sbert.embeddings.search import Hit
from sbert.index import VectorIndex
from sbert.index.hybrid import HybridIndex, fuse, min_max, reciprocal_rank_fusion, weighted_fusion
from sbert.index.sparse_index import SparseIndex


def test_rrf_by_hand() -> None:
    dense = [Hit(10, 0.9), Hit(11, 0.7), Hit(12, 0.1)]
    sparse = [Hit(12, 30.0), Hit(13, 20.0), Hit(10, 5.0)]
    fused = reciprocal_rank_fusion([dense, sparse], k=60)
    expected = {10: 1 / 61 + 1 / 63, 11: 1 / 62, 12: 1 / 63 + 1 / 61, 13: 1 / 62}
    # 10 and 12 tie, as do 11 and 13: first appearance decides (dense list first)
    assert [h.corpus_id for h in fused] == [10, 12, 11, 13]
    assert {h.corpus_id: h.score for h in fused} == pytest.approx(expected, abs=0)
    assert [h.corpus_id for h in reciprocal_rank_fusion([dense, sparse], k=0, top_k=2)] == [10, 12]
    assert reciprocal_rank_fusion([[], []]) == []
    with pytest.raises(ValueError, match="k must be 0 or more"):
        reciprocal_rank_fusion([dense], k=-1)


def test_weighted_min_max_by_hand() -> None:
    dense = [Hit(1, 0.8), Hit(2, 0.6), Hit(3, 0.4)]  # → 1.0, 0.5, 0.0
    sparse = [Hit(3, 12.0), Hit(4, 10.0), Hit(1, 2.0)]  # → 1.0, 0.8, 0.0
    fused = weighted_fusion([dense, sparse], weights=[0.25, 0.75])
    expected = {1: 0.25, 2: 0.125, 3: 0.75, 4: 0.6}
    assert [h.corpus_id for h in fused] == [3, 4, 1, 2]
    assert {h.corpus_id: h.score for h in fused} == pytest.approx(expected)
    assert [h.score for h in min_max([Hit(5, 2.0), Hit(6, 2.0)])] == [1.0, 1.0]  # one score: all 1
    # equal weights: 1 and 3 tie at 0.5, first appearance (dense) decides
    assert [h.corpus_id for h in weighted_fusion([dense, sparse])] == [1, 3, 4, 2]
    with pytest.raises(ValueError, match="3 weights given for 2"):
        weighted_fusion([dense, sparse], weights=[1, 1, 1])
    with pytest.raises(ValueError, match="0 or more"):
        weighted_fusion([dense, sparse], weights=[1, -1])
    with pytest.raises(ValueError, match="unknown fusion 'max'"):
        fuse([dense], [sparse], "max")
    with pytest.raises(ValueError, match="2 dense result lists but 1 sparse"):
        fuse([dense, dense], [sparse])


def test_rrf_equals_sentence_transformers_evaluator(tmp_path: Path) -> None:
    evaluation = pytest.importorskip("sentence_transformers.sparse_encoder.evaluation")
    rng = np.random.default_rng(0)
    dense_samples, sparse_samples, ours = [], [], []
    for query in range(30):
        dense_docs = rng.choice(40, size=rng.integers(2, 20), replace=False).tolist()
        sparse_docs = rng.choice(40, size=rng.integers(2, 20), replace=False).tolist()
        sample = {"query_id": str(query), "query": f"q{query}", "positive": [f"d{dense_docs[0]}"]}
        dense_samples.append({**sample, "documents": [f"d{d}" for d in dense_docs]})
        sparse_samples.append({**sample, "documents": [f"d{d}" for d in sparse_docs]})
        dense_hits = [Hit(d, 1.0 - rank / 100) for rank, d in enumerate(dense_docs)]
        sparse_hits = [Hit(d, 50.0 - rank) for rank, d in enumerate(sparse_docs)]
        ours.append([f"d{h.corpus_id}" for h in fuse([dense_hits], [sparse_hits], "rrf", k=60)[0]])
    evaluator = evaluation.ReciprocalRankFusionEvaluator(
        dense_samples, sparse_samples, rrf_k=60, write_csv=False, write_predictions=True
    )
    evaluator(output_path=str(tmp_path))
    predictions = tmp_path / "ReciprocalRankFusion_evaluation_predictions.jsonl"
    theirs = [json.loads(line)["documents"] for line in predictions.read_text().splitlines()]
    assert ours == theirs  # the same fused order, ties included


def test_hybrid_index_fuses_the_two_indexes() -> None:
    rng = np.random.default_rng(1)
    dense_vectors = rng.normal(size=(200, 16)).astype(np.float32)
    sparse_vectors = scipy.sparse.random(
        200, 300, density=0.05, format="csr", random_state=2, dtype=np.float32
    )
    dense, sparse = VectorIndex.build(dense_vectors, kind="flat"), SparseIndex.build(sparse_vectors)
    hybrid = HybridIndex(dense, sparse, candidates=50)
    queries_dense, queries_sparse = dense_vectors[:5], sparse_vectors[:5]
    expected = fuse(dense.search(queries_dense, 50), sparse.search(queries_sparse, 50), "rrf", top_k=10)
    assert hybrid.search(queries_dense, queries_sparse, top_k=10) == expected
    assert all(hits[0].corpus_id == q for q, hits in enumerate(expected))  # first in both lists
    weighted = HybridIndex(dense, sparse, "weighted", candidates=50, weights=(1.0, 0.0))
    assert [h.corpus_id for h in weighted.search(queries_dense, queries_sparse, 5)[0]] == [
        h.corpus_id for h in dense.search(queries_dense[:1], 5)[0]
    ]
    with pytest.raises(ValueError, match="candidates"):
        HybridIndex(dense, sparse, candidates=0)
