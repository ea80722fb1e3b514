import numpy as np
import pytest
import torch

from sbert.embeddings.search import Hit, semantic_search, top_k_rows


def brute_force(queries: np.ndarray, corpus: np.ndarray, k: int, cosine: bool) -> list[list[Hit]]:
    """Reference: full score matrix in float64, sorted by (score desc, id asc)."""
    q, c = queries.astype(np.float64), corpus.astype(np.float64)
    if cosine:
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        c = c / np.linalg.norm(c, axis=1, keepdims=True)
    scores = q @ c.T
    results = []
    for row in scores:
        order = np.lexsort((np.arange(len(row)), -row))[:k]
        results.append([Hit(int(i), float(row[i])) for i in order])
    return results


@pytest.mark.parametrize("chunks", [(100, 100_000), (3, 7), (1, 1)])
def test_cosine_matches_brute_force(chunks: tuple[int, int]) -> None:
    rng = np.random.default_rng(0)
    corpus, queries = rng.normal(size=(53, 16)), rng.normal(size=(11, 16))
    found = semantic_search(queries, corpus, top_k=5, query_chunk_size=chunks[0], corpus_chunk_size=chunks[1])
    expected = brute_force(queries, corpus, 5, cosine=True)
    for got_row, want_row in zip(found, expected):
        assert [h.corpus_id for h in got_row] == [h.corpus_id for h in want_row]
        np.testing.assert_allclose([h.score for h in got_row], [h.score for h in want_row], atol=1e-5)


@pytest.mark.parametrize("chunks", [(100, 100_000), (4, 5), (1, 3)])
def test_ties_break_by_lower_id_whatever_the_chunks(chunks: tuple[int, int]) -> None:
    # Small integer vectors: dot products are exact in float32, and many are equal.
    rng = np.random.default_rng(1)
    corpus = rng.integers(-1, 2, size=(40, 3)).astype(np.float32)
    queries = rng.integers(-1, 2, size=(9, 3)).astype(np.float32)
    found = semantic_search(
        queries,
        corpus,
        top_k=7,
        score_function="dot",
        query_chunk_size=chunks[0],
        corpus_chunk_size=chunks[1],
    )
    assert found == brute_force(queries, corpus, 7, cosine=False)
    assert any(row[0].score == row[1].score for row in found)  # the data does hold ties


def test_top_k_larger_than_corpus_returns_everything_sorted() -> None:
    rng = np.random.default_rng(2)
    corpus, query = rng.normal(size=(6, 4)), rng.normal(size=4)
    (hits,) = semantic_search(query, corpus, top_k=50, corpus_chunk_size=4)
    assert sorted(h.corpus_id for h in hits) == list(range(6))
    assert [h.corpus_id for h in hits] == [
        h.corpus_id for h in brute_force(query[None], corpus, 6, cosine=True)[0]
    ]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_accepts_tensors_and_float64() -> None:
    corpus = torch.eye(3, dtype=torch.float64)
    assert semantic_search(torch.tensor([0.0, 1.0, 0.0]), corpus, top_k=1) == [[Hit(1, 1.0)]]


@pytest.mark.parametrize("top_k", [0, -3])
def test_top_k_must_be_positive(top_k: int) -> None:
    with pytest.raises(ValueError, match="top_k"):
        semantic_search(np.ones((1, 2)), np.ones((3, 2)), top_k=top_k)


def test_empty_corpus_and_dimension_mismatch_are_named() -> None:
    with pytest.raises(ValueError, match="corpus is empty"):
        semantic_search(np.ones((1, 2)), np.ones((0, 2)))
    with pytest.raises(
        ValueError, match=r"query embeddings have dimension 3 but corpus embeddings have dimension 2"
    ):
        semantic_search(np.ones((1, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="score_function"):
        semantic_search(np.ones((1, 2)), np.ones((4, 2)), score_function="euclid")


def test_top_k_rows_full_sort_on_boundary_ties() -> None:
    scores = torch.tensor([[0.5, 0.75, 0.5, 0.5, 0.25]])
    values, columns = top_k_rows(scores, 2)
    assert columns.tolist() == [[1, 0]] and values.tolist() == [[0.75, 0.5]]
