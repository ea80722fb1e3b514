import numpy as np
import pytest

from sbert.applications.mining import Pair, paraphrase_mining


def brute_force(vectors: np.ndarray, top_k: int, max_pairs: int) -> list[tuple[int, int]]:
    """Reference with the full N × N matrix: a pair counts when one side is in the other's top_k."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ unit.T
    np.fill_diagonal(scores, -np.inf)
    pairs = {}
    for i, row in enumerate(scores):
        for j in np.argsort(-row, kind="stable")[: min(top_k, len(row) - 1)]:
            pairs[(min(i, int(j)), max(i, int(j)))] = float(scores[i, j])
    ranked = sorted(pairs.items(), key=lambda item: (-item[1], item[0]))
    return [pair for pair, _ in ranked[:max_pairs]]


@pytest.mark.parametrize(
    ("top_k", "max_pairs", "chunk"), [(3, 20, 5000), (1, 100, 7), (10, 50, 4), (60, 10_000, 16)]
)
def test_equals_brute_force(top_k: int, max_pairs: int, chunk: int) -> None:
    vectors = np.random.default_rng(top_k).normal(size=(50, 12))
    pairs = paraphrase_mining(
        vectors, top_k=top_k, max_pairs=max_pairs, query_chunk_size=chunk, corpus_chunk_size=chunk
    )
    assert [(p.i, p.j) for p in pairs] == brute_force(vectors, top_k, max_pairs)
    assert all(p.i < p.j for p in pairs)
    assert [p.score for p in pairs] == sorted((p.score for p in pairs), reverse=True)


def test_duplicates_score_one_and_no_self_pairs() -> None:
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    pairs = paraphrase_mining(vectors, top_k=2, max_pairs=10)
    assert {(p.i, p.j) for p in pairs[:3]} == {(0, 1), (0, 2), (1, 2)}
    assert all(p.i != p.j for p in pairs) and pairs[0].score == pytest.approx(1.0)


def test_sentences_need_a_model_and_small_inputs() -> None:
    with pytest.raises(ValueError, match="model"):
        paraphrase_mining(["a", "b"])
    assert paraphrase_mining(np.ones((1, 3))) == []
    with pytest.raises(ValueError, match="top_k"):
        paraphrase_mining(np.ones((3, 3)), top_k=0)


def test_sentences_with_tiny_model(tiny_encoder) -> None:
    sentences = ["a man plays guitar", "a man plays guitar", "the dog runs in the park"]
    pairs = paraphrase_mining(sentences, tiny_encoder, top_k=2)
    assert pairs[0] == Pair(pairs[0].score, 0, 1) and pairs[0].score == pytest.approx(1.0, abs=1e-5)
