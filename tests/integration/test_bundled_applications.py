"""Search, index, mining and clustering on the bundled model with the demo corpus (a few seconds)."""

from pathlib import Path

import numpy as np
import pytest

from sbert.applications import agglomerative, paraphrase_mining, semantic_search
from sbert.cli.demo import demo_corpus

pytestmark = pytest.mark.integration


def test_search_index_and_mining_agree_on_the_demo_corpus(bundled_encoder, tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    from sbert.index import VectorIndex

    corpus = demo_corpus()
    vectors = bundled_encoder.encode(corpus)
    queries = bundled_encoder.encode(["A spacecraft was sent into space.", "Prices keep going up."])
    exact = semantic_search(queries, vectors, top_k=3)
    assert "rocket" in corpus[exact[0][0].corpus_id] and "Inflation" in corpus[exact[1][0].corpus_id]

    VectorIndex.build(vectors, texts=corpus, kind="hnsw", model_name=bundled_encoder.name).save(
        tmp_path / "idx"
    )
    index = VectorIndex.load(tmp_path / "idx", model=bundled_encoder)
    assert [[h.corpus_id for h in row] for row in index.search(queries, top_k=3)] == [
        [h.corpus_id for h in row] for row in exact
    ]

    pairs = paraphrase_mining(corpus, bundled_encoder, top_k=5, max_pairs=10)
    full = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = full @ full.T
    np.fill_diagonal(scores, -1)
    i, j = np.unravel_index(np.argmax(scores), scores.shape)
    assert (pairs[0].i, pairs[0].j) == (min(i, j), max(i, j))
    assert len(set(agglomerative(vectors, n_clusters=8).tolist())) == 8
