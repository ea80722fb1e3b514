"""The candidate table of hard-negative mining: exact, through a new index, through a saved one."""

from __future__ import annotations

import numpy as np
import pytest

from sbert.applications.candidates import nearest, nearest_in_index
from sbert.index import VectorIndex

pytest.importorskip("faiss")


def vectors(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 16)).astype(np.float32)


def test_exact_and_flat_agree_and_short_corpora_are_padded() -> None:
    queries, corpus = vectors(4, 0), vectors(30, 1)
    exact_scores, exact_ids = nearest(queries, corpus, 5)
    flat_scores, flat_ids = nearest(queries, corpus, 5, "flat")
    assert exact_ids.tolist() == flat_ids.tolist() and exact_ids.shape == (4, 5)
    np.testing.assert_allclose(exact_scores, flat_scores, atol=1e-5)
    unit = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    best = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ unit.T
    assert exact_ids[:, 0].tolist() == best.argmax(axis=1).tolist()
    scores, ids = nearest(queries, corpus[:3], 5, "flat")
    assert (ids[:, 3:] == -1).all() and np.isinf(scores[:, 3:]).all() and (ids[:, :3] >= 0).all()


def test_a_saved_index_numbers_candidates_by_text() -> None:
    corpus = vectors(6, 2)
    texts = ["a", "b", "c", "d", "e", "f", "a"]  # "a" held twice, ids 0 and 6, the same vector
    index = VectorIndex.build(np.vstack([corpus, corpus[:1]]), texts=texts, kind="flat")
    known, position = ["c", "z"], {"c": 0, "z": 1}  # the positives, numbered first
    scores, ids = nearest_in_index(index, corpus[:1], 4, known, position)
    assert known[:2] == ["c", "z"] and set(known) == {"a", "b", "c", "d", "e", "f", "z"}
    row = [known[i] for i in ids[0].tolist()]
    assert row[0] == "a" and len(set(row)) == 4  # its own text first, once though held twice
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-5) and list(scores[0]) == sorted(scores[0], reverse=True)
    assert ids[0].tolist().count(position["c"]) <= 1  # a positive found in the index keeps its number


def test_an_index_without_texts_is_refused() -> None:
    index = VectorIndex.build(vectors(5, 3), kind="flat")
    with pytest.raises(ValueError, match="holds no text for corpus id"):
        nearest_in_index(index, vectors(1, 4), 2, [], {})
