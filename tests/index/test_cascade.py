"""The cascade: a static model's index proposes candidates, a transformer re-ranks them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.conftest import WORDS

from sbert import SentenceEncoder
from sbert.index.cascade import cascade_search, rerank

pytest.importorskip("faiss")
from sbert.index import VectorIndex

QUERIES = ["a man plays guitar", "the dog runs in the park", "space rocket", "happy child eats food"]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    # Distinct sentences: equal texts would tie at the candidate boundary, where FAISS and numpy may differ.
    rng = np.random.default_rng(0)
    sentences = {" ".join(rng.choice(WORDS, size=int(rng.integers(3, 8)))) for _ in range(120)}
    return sorted(sentences)[:60]


@pytest.fixture()
def static_model(tiny_static_dir: Path) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(tiny_static_dir)


@pytest.fixture()
def index(static_model: SentenceEncoder, corpus: list[str]) -> VectorIndex:
    return VectorIndex.build(static_model.encode_document(corpus), texts=corpus, kind="flat")


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def oracle(
    static_model: SentenceEncoder, rescorer: SentenceEncoder, corpus: list[str], candidates: int, top_k: int
) -> list[list[tuple[int, float]]]:
    """Exact search by the rescorer, restricted to each query's top candidates by the static model."""
    first = unit(static_model.encode_query(QUERIES)) @ unit(static_model.encode_document(corpus)).T
    second = unit(rescorer.encode_query(QUERIES)) @ unit(rescorer.encode_document(corpus)).T
    expected = []
    for first_row, second_row in zip(first, second):
        allowed = np.argsort(-first_row, kind="stable")[:candidates]
        masked = np.full_like(second_row, -np.inf)
        masked[allowed] = second_row[allowed]
        best = np.argsort(-masked, kind="stable")[: min(top_k, len(allowed))]
        expected.append([(int(i), float(second_row[i])) for i in best])
    return expected


@pytest.mark.parametrize(("candidates", "top_k"), [(12, 5), (3, 8), (60, 60), (20, 200)])
def test_cascade_is_exact_rescorer_search_over_the_candidates(
    static_model, tiny_encoder, index, corpus, candidates: int, top_k: int
) -> None:
    found = cascade_search(
        index, QUERIES, static_model.encode_query(QUERIES), tiny_encoder, top_k=top_k, candidates=candidates
    )
    # k > candidates widens the candidates to k; k > the corpus gives the whole corpus.
    expected = oracle(static_model, tiny_encoder, corpus, max(candidates, top_k), top_k)
    assert [len(hits) for hits in found] == [min(top_k, len(corpus))] * len(QUERIES)
    for hits, wanted in zip(found, expected):
        assert [hit.corpus_id for hit in hits] == [i for i, _ in wanted]
        np.testing.assert_allclose([hit.score for hit in hits], [s for _, s in wanted], atol=1e-5)


def test_scores_are_the_rescorers_cosines_not_the_index(static_model, tiny_encoder, index, corpus) -> None:
    vectors = static_model.encode_query(QUERIES)
    first = index.search(vectors, top_k=5)
    found = cascade_search(index, QUERIES, vectors, tiny_encoder, top_k=5, candidates=5)
    for query, hits, first_hits in zip(QUERIES, found, first):
        assert {h.corpus_id for h in hits} == {h.corpus_id for h in first_hits}  # same set, re-ordered
        for hit in hits:
            pair = unit(
                np.vstack(
                    [
                        tiny_encoder.encode_query([query]),
                        tiny_encoder.encode_document([corpus[hit.corpus_id]]),
                    ]
                )
            )
            assert hit.score == pytest.approx(float(pair[0] @ pair[1]), abs=1e-5)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_the_rescorers_prompts_apply(tiny_model_dir: Path) -> None:
    class Recorder:
        def __init__(self) -> None:
            self.calls: list[tuple[str, list[str], str | None]] = []

        def encode_query(self, texts, prompt_name=None, **options):
            self.calls.append(("query", texts, prompt_name))
            return np.ones((len(texts), 2))

        def encode_document(self, texts, prompt_name=None, **options):
            self.calls.append(("document", texts, prompt_name))
            return np.ones((len(texts), 2))

    recorder = Recorder()
    texts = {4: "x", 9: "y", 2: "z"}
    hits = rerank(["q1", "q2"], [[9, 4], [2, 9]], texts, recorder, top_k=5, document_prompt_name="passage")
    # Each distinct candidate embedded once, with the document side's prompt; equal scores by id.
    assert recorder.calls == [("query", ["q1", "q2"], None), ("document", ["z", "x", "y"], "passage")]
    assert [[h.corpus_id for h in row] for row in hits] == [[4, 9], [2, 9]]


def test_an_index_without_texts_is_refused(static_model, tiny_encoder, corpus) -> None:
    bare = VectorIndex.build(static_model.encode_document(corpus), kind="flat")
    with pytest.raises(ValueError, match="holds no texts .*build the index with its texts"):
        cascade_search(bare, QUERIES, static_model.encode_query(QUERIES), tiny_encoder)


def test_bad_arguments_are_named(static_model, tiny_encoder, index) -> None:
    vectors = static_model.encode_query(QUERIES)
    with pytest.raises(ValueError, match="candidates must be at least 1, got 0"):
        cascade_search(index, QUERIES, vectors, tiny_encoder, candidates=0)
    with pytest.raises(ValueError, match="3 queries given with 4 query embeddings"):
        cascade_search(index, QUERIES[:3], vectors, tiny_encoder)
    with pytest.raises(ValueError, match=r"no text for corpus ids \[7\]"):
        rerank(["q"], [[1, 7]], {1: "a", 7: None}, tiny_encoder)
