import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

from sbert.embeddings.search import semantic_search
from sbert.index import (
    FAISS_FILE,
    MANIFEST_FILE,
    IndexLoadError,
    VectorIndex,
    choose_kind,
    recall_at_k,
)


class FakeModel:
    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim


def corpus(n: int = 300, dim: int = 16, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_each_kind_finds_exact_neighbours(kind: str) -> None:
    vectors = corpus(n=2000)
    index = VectorIndex.build(vectors, kind=kind, params={"nprobe": 8} if kind == "ivf" else None)
    assert index.kind == kind and len(index) == 2000
    assert recall_at_k(index, vectors[:50], k=5) >= (1.0 if kind == "flat" else 0.8)


def test_flat_search_equals_semantic_search() -> None:
    vectors = corpus()
    index = VectorIndex.build(vectors, kind="flat", ids=np.arange(300) + 1000)
    found = index.search(vectors[:5] + 0.1, top_k=4)
    exact = semantic_search(vectors[:5] + 0.1, vectors, top_k=4)
    assert [[h.corpus_id - 1000 for h in row] for row in found] == [
        [h.corpus_id for h in row] for row in exact
    ]
    np.testing.assert_allclose(
        [[h.score for h in row] for row in found], [[h.score for h in row] for row in exact], atol=1e-5
    )


def test_auto_kind_by_size() -> None:
    assert [choose_kind(n).kind for n in (100_000, 100_001, 6_000_000)] == ["flat", "hnsw", "ivfpq"]
    assert VectorIndex.build(corpus(n=10)).kind == "flat"


def test_save_load_round_trip(tmp_path: Path) -> None:
    vectors = corpus()
    texts = [f"sentence {i} ünïcode" for i in range(300)]
    index = VectorIndex.build(vectors[:200], texts=texts[:200], kind="hnsw", model_name="m")
    index.add(vectors[200:], texts=texts[200:])
    index.save(tmp_path / "idx")
    loaded = VectorIndex.load(tmp_path / "idx", model=FakeModel("m", 16))
    assert loaded.kind == "hnsw" and len(loaded) == 300 and loaded.texts == texts
    assert loaded.search(vectors[:3], top_k=3) == index.search(vectors[:3], top_k=3)
    assert loaded.text(299) == texts[299]
    manifest = json.loads((tmp_path / "idx" / MANIFEST_FILE).read_text())
    assert manifest["count"] == 300 and manifest["dimension"] == 16 and manifest["normalized"] is True
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]  # no temporary left


def test_corrupt_faiss_file_names_it(tmp_path: Path) -> None:
    VectorIndex.build(corpus(), kind="flat").save(tmp_path / "idx")
    faiss_file = tmp_path / "idx" / FAISS_FILE
    faiss_file.write_bytes(faiss_file.read_bytes()[:100])  # half-written
    with pytest.raises(IndexLoadError, match=FAISS_FILE):
        VectorIndex.load(tmp_path / "idx")


@pytest.mark.parametrize("damage", ["manifest", "ids", "corpus"])
def test_damaged_files_are_named(tmp_path: Path, damage: str) -> None:
    VectorIndex.build(corpus(), texts=["t"] * 300, kind="flat").save(tmp_path / "idx")
    target = {"manifest": MANIFEST_FILE, "ids": "ids.npy", "corpus": "corpus.jsonl"}[damage]
    (tmp_path / "idx" / target).write_text("{oops\n")
    with pytest.raises(IndexLoadError, match=target.replace(".", r"\.")):
        VectorIndex.load(tmp_path / "idx")


def test_failed_save_keeps_previous_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = corpus()
    VectorIndex.build(vectors, kind="flat", model_name="old").save(tmp_path / "idx")
    bigger = VectorIndex.build(np.vstack([vectors, vectors]), kind="flat", model_name="new")

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("numpy.save", crash)
    with pytest.raises(OSError, match="disk full"):
        bigger.save(tmp_path / "idx")
    kept = VectorIndex.load(tmp_path / "idx")
    assert kept.model_name == "old" and len(kept) == 300
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]


def test_model_mismatch_names_both_sides(tmp_path: Path) -> None:
    VectorIndex.build(corpus(), kind="flat", model_name="model-a").save(tmp_path / "idx")
    with pytest.raises(IndexLoadError, match=r"'model-a'.*'model-b'"):
        VectorIndex.load(tmp_path / "idx", model=FakeModel("model-b", 16))
    with pytest.raises(IndexLoadError, match=r"16-d.*384-d"):
        VectorIndex.load(tmp_path / "idx", model=FakeModel("model-a", 384))


def test_bad_queries_and_vectors() -> None:
    index = VectorIndex.build(corpus(), kind="flat", model_name="m")
    with pytest.raises(ValueError, match=r"dimension 8 but the index holds 16-d"):
        index.search(np.ones((1, 8)))
    with pytest.raises(ValueError, match="top_k"):
        index.search(np.ones(16), top_k=0)
    with pytest.raises(ValueError, match="16-d"):
        index.add(np.ones((2, 8)))
    with pytest.raises(ValueError, match="non-empty"):
        VectorIndex.build(np.empty((0, 16)))
    assert len(index.search(np.ones(16), top_k=1000)[0]) == 300


@pytest.mark.parametrize("kind", ["flat", "ivfpq"])
def test_a_prefix_index_searches_like_exact_search_on_cut_vectors(kind: str, tmp_path: Path) -> None:
    from sbert.embeddings.truncation import truncate_embeddings
    from sbert.index.building import ArraySource, build_index

    vectors, queries = corpus(400, 32), corpus(5, 32, seed=1)
    index = VectorIndex.build(vectors, kind=kind, model_name="m", dimensions=8, rescore="float32")
    assert (index.dim, index.truncated_from) == (8, 32)
    expected = semantic_search(truncate_embeddings(queries, 8), truncate_embeddings(vectors, 8), top_k=5)
    found = index.search(index.query_vectors(queries), top_k=5)
    if kind == "flat":
        assert [[h.corpus_id for h in hits] for hits in found] == [
            [h.corpus_id for h in hits] for hits in expected
        ]
    with pytest.raises(
        ValueError, match=r"dimension 32 but the index holds 8-d vectors \(the first 8 of the 32"
    ):
        index.search(queries)
    with pytest.raises(ValueError, match="dimension 12 but the index holds 8-d"):
        index.search(index.query_vectors(corpus(1, 12)))
    index.save(tmp_path / "idx")
    assert json.loads((tmp_path / "idx" / MANIFEST_FILE).read_text())["truncated_from"] == 32
    loaded = VectorIndex.load(tmp_path / "idx", model=FakeModel("m", 32))  # the model gives 32-d vectors
    assert loaded.search(loaded.query_vectors(queries), 5) == found
    with pytest.raises(IndexLoadError, match="vectors of a 32-d model, but the model gives 8-d"):
        VectorIndex.load(tmp_path / "idx", model=FakeModel("m", 8))
    streamed = build_index(
        ArraySource(vectors), tmp_path / "streamed", kind=kind, rescore="float32", dimensions=8
    )
    assert streamed.truncated_from == 32 and streamed.search(streamed.query_vectors(queries), 5) == found
    with pytest.raises(ValueError, match="between 1 and the vectors' 32, got 33"):
        VectorIndex.build(vectors, kind="flat", dimensions=33)
    full = VectorIndex.build(vectors, kind="flat", dimensions=32)
    assert full.truncated_from is None and full.query_vectors(queries).shape == (5, 32)
