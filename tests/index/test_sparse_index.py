"""SparseIndex: exact search equals brute force, Seismic finds most of it, and the directory follows the
dense index's rules (checksums, atomic swap, model check)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
import torch

from sbert.embeddings.identity import ModelMismatchError, model_identity
from sbert.index import MANIFEST_FILE, IndexLoadError, VectorIndex, sparse_index
from sbert.index.sparse_index import SEISMIC_FILE, VECTORS_FILE, SparseIndex, is_sparse_index
from sbert.sparse.vectors import to_pairs

REPO = Path(__file__).resolve().parents[2]


class FakeModel:
    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim


def sparse_corpus(n: int = 1500, dim: int = 400, seed: int = 0) -> scipy.sparse.csr_matrix:
    """Zipf-like term use, as text gives: a few dimensions in many documents, most in few. Rows 0-9
    are repeated at the end (equal scores) and two rows are empty."""
    rng = np.random.default_rng(seed)
    rows, cols, vals = [], [], []
    weights = 1.0 / np.arange(1, dim + 1) ** 0.8
    weights /= weights.sum()
    for row in range(n):
        terms = np.unique(rng.choice(dim, size=rng.integers(5, 40), p=weights))
        rows += [row] * len(terms)
        cols += terms.tolist()
        vals += rng.gamma(2.0, 0.5, size=len(terms)).astype(np.float32).tolist()
    matrix = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(n, dim), dtype=np.float32)
    empty = scipy.sparse.csr_matrix((2, dim), dtype=np.float32)
    return scipy.sparse.vstack([matrix, matrix[:10], empty]).tocsr()


def brute_force(queries: scipy.sparse.csr_matrix, corpus: scipy.sparse.csr_matrix, k: int) -> list[list[int]]:
    """The dense numpy oracle: every score in float64, best first, equal scores lower position first."""
    scores = queries.toarray().astype(np.float64) @ corpus.toarray().astype(np.float64).T  # (q, n)
    return [np.lexsort((np.arange(len(row)), -row))[:k].tolist() for row in scores]


def test_exact_search_equals_dense_numpy_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = sparse_corpus()
    queries = sparse_corpus(60, seed=1)[:40]
    queries = scipy.sparse.vstack([queries, corpus[3], corpus[1505]]).tocsr()  # a duplicated row's query
    expected = brute_force(queries, corpus, 10)
    index = SparseIndex.build(corpus)
    found = index.search(queries, top_k=10)
    assert [[hit.corpus_id for hit in hits] for hits in found] == expected
    dense_scores = queries.toarray().astype(np.float64) @ corpus.toarray().astype(np.float64).T
    for row, hits in enumerate(found):
        np.testing.assert_allclose([h.score for h in hits], dense_scores[row, expected[row]], rtol=1e-12)
    assert [h.corpus_id for h in found[-2]][:2] == [3, 1503]  # the tie: lower position first
    # chunked in queries and in corpus blocks: the same result
    monkeypatch.setattr(sparse_index, "QUERY_CHUNK_SIZE", 7)
    monkeypatch.setattr(sparse_index, "CORPUS_CHUNK_SIZE", 333)
    assert SparseIndex.build(corpus).search(queries, top_k=10) == found


def test_every_vector_form_and_ids_and_short_corpora() -> None:
    corpus = sparse_corpus(50, dim=30)
    queries = corpus[:5]
    ids = np.arange(1000, 1062)
    expected = SparseIndex.build(corpus, ids=ids).search(queries, top_k=4)
    assert [h.corpus_id - 1000 for h in expected[0]] == brute_force(queries, corpus, 4)[0]
    for form in (torch.from_numpy(corpus.toarray()).to_sparse(), to_pairs(corpus), corpus.toarray()):
        assert SparseIndex.build(form, ids=ids).search(queries, top_k=4) == expected
    assert SparseIndex.build(corpus).search(to_pairs(queries), top_k=4) == SparseIndex.build(corpus).search(
        torch.from_numpy(queries.toarray()).to_sparse(), top_k=4
    )
    assert len(SparseIndex.build(corpus).search(queries[0], top_k=1000)[0]) == 62  # zeros too, as dense


def test_bad_input_is_named() -> None:
    corpus = sparse_corpus(20, dim=30)
    index = SparseIndex.build(corpus, model_name="m")
    with pytest.raises(ValueError, match=r"query vectors have 31 dimensions but the index holds 30"):
        index.search(scipy.sparse.csr_matrix((1, 31)))
    with pytest.raises(ValueError, match="top_k"):
        index.search(corpus[0], top_k=0)
    with pytest.raises(ValueError, match="at least one"):
        SparseIndex.build(scipy.sparse.csr_matrix((0, 30)))
    with pytest.raises(ValueError, match="3 ids given for 32"):
        SparseIndex.build(corpus, ids=[1, 2, 3])
    with pytest.raises(ValueError, match="repeat"):
        SparseIndex.build(corpus, ids=[0] * 32)
    with pytest.raises(ValueError, match="2 texts given for 32"):
        SparseIndex.build(corpus, texts=["a", "b"])
    with pytest.raises(ValueError, match="unknown sparse index kind 'faiss'"):
        SparseIndex.build(corpus, kind="faiss")


def test_seismic_recall_against_exact() -> None:
    corpus = sparse_corpus(3000, seed=2)
    queries = sparse_corpus(100, seed=3)[:100]
    index = SparseIndex.build(corpus, kind="seismic")
    exact = index.search(queries, top_k=10, exact=True)
    approximate = index.search(queries, top_k=10)
    recall = np.mean(
        [len({h.corpus_id for h in a} & {h.corpus_id for h in e}) / 10 for a, e in zip(approximate, exact)]
    )
    assert recall >= 0.9, recall
    wider = index.search(queries, top_k=10, query_cut=40, heap_factor=0.95)
    recall_wide = np.mean(
        [len({h.corpus_id for h in a} & {h.corpus_id for h in e}) / 10 for a, e in zip(wider, exact)]
    )
    assert recall_wide >= 0.9, recall_wide  # not always >= recall: Seismic's scores are approximate too


@pytest.mark.parametrize("kind", ["exact", "seismic"])
def test_save_load_round_trip(kind: str, tmp_path: Path) -> None:
    corpus = sparse_corpus(400, seed=4)
    texts = [f"document {i}" for i in range(corpus.shape[0])]
    index = SparseIndex.build(
        corpus, texts=texts, ids=np.arange(corpus.shape[0]) * 2, kind=kind, model_name="m"
    )
    index.save(tmp_path / "idx")
    assert is_sparse_index(tmp_path / "idx")
    loaded = SparseIndex.load(tmp_path / "idx", model="m")
    assert (loaded.kind, loaded.model_name, len(loaded)) == (kind, "m", len(index))
    assert loaded.search(corpus[:20], top_k=5) == index.search(corpus[:20], top_k=5)
    assert loaded.texts_of([0, 6, 5]) == ["document 0", "document 3", None]
    manifest = json.loads((tmp_path / "idx" / MANIFEST_FILE).read_text())
    assert manifest["format"] == "sbert-sparse-index" and manifest["count"] == corpus.shape[0]
    assert set(manifest["files"]) == {VECTORS_FILE, "ids.npy", "corpus.jsonl"} | (
        {SEISMIC_FILE} if kind == "seismic" else set()
    )
    # a dense index may replace a sparse one at the same path, and the reverse (both are indexes)
    VectorIndex.build(np.eye(4, dtype=np.float32), kind="flat").save(tmp_path / "idx")
    index.save(tmp_path / "idx")
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]


@pytest.mark.parametrize("damaged", [VECTORS_FILE, "ids.npy", "corpus.jsonl", SEISMIC_FILE])
def test_a_tampered_file_is_refused(damaged: str, tmp_path: Path) -> None:
    SparseIndex.build(sparse_corpus(200), texts=["t"] * 212, kind="seismic").save(tmp_path / "idx")
    path = tmp_path / "idx" / damaged
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexLoadError, match=rf"{damaged}.*checksum does not match"):
        SparseIndex.load(tmp_path / "idx")


def test_a_dense_index_is_named_as_such(tmp_path: Path) -> None:
    VectorIndex.build(np.eye(4, dtype=np.float32), kind="flat").save(tmp_path / "dense")
    with pytest.raises(IndexLoadError, match="a dense index"):
        SparseIndex.load(tmp_path / "dense")


def test_model_mismatch_is_refused(tmp_path: Path, tiny_encoder) -> None:  # type: ignore[no-untyped-def]
    width = tiny_encoder.dim  # a sparse width equal to the model's, so only the identity can differ
    corpus = sparse_corpus(30, dim=width)
    SparseIndex.build(corpus, model_name="model-a").save(tmp_path / "named")
    with pytest.raises(IndexLoadError, match=r"'model-a'.*'model-b'"):
        SparseIndex.load(tmp_path / "named", model=FakeModel("model-b", width))
    with pytest.raises(IndexLoadError, match=rf"{width}-d.*{width + 1}-d"):
        SparseIndex.load(tmp_path / "named", model=FakeModel("model-a", width + 1))
    SparseIndex.build(corpus, model=tiny_encoder).save(tmp_path / "fingerprinted")
    assert SparseIndex.load(tmp_path / "fingerprinted", model=tiny_encoder).identity == model_identity(
        tiny_encoder
    )
    with torch.no_grad():
        next(tiny_encoder.parameters()).add_(1.0)  # other weights under the same name
    with pytest.raises(ModelMismatchError, match="the weights differ"):
        SparseIndex.load(tmp_path / "fingerprinted", model=tiny_encoder)


def test_a_failed_save_keeps_the_previous_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    SparseIndex.build(sparse_corpus(50), model_name="old").save(tmp_path / "idx")
    bigger = SparseIndex.build(sparse_corpus(80), model_name="new")

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("numpy.save", crash)
    with pytest.raises(OSError, match="disk full"):
        bigger.save(tmp_path / "idx")
    kept = SparseIndex.load(tmp_path / "idx")
    assert kept.model_name == "old" and len(kept) == 62
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]


KILLED_SAVE = """
import sys, time
import scipy.sparse
from sbert.index import files, sparse_index
from sbert.index.sparse_index import SparseIndex

def stall(staging, *args, **kwargs):
    print(staging, flush=True)
    time.sleep(60)

files.write_texts = stall
SparseIndex.build(scipy.sparse.random(30, 20, density=0.3, format="csr"), model_name="new").save(sys.argv[1])
"""


def test_a_killed_save_leaves_the_old_index(tmp_path: Path) -> None:
    SparseIndex.build(sparse_corpus(50), model_name="old").save(tmp_path / "idx")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_SAVE, str(tmp_path / "idx")], stdout=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    staging = Path(process.stdout.readline().strip())  # printed once vectors and ids are written
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert staging.is_dir() and (staging / VECTORS_FILE).is_file()
    assert SparseIndex.load(tmp_path / "idx").model_name == "old"  # the old index, whole
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{process.pid}"):
        time.sleep(0.05)
    SparseIndex.build(sparse_corpus(50), model_name="next").save(tmp_path / "idx")
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]  # the stale staging dir is gone
