"""Compressed index kinds with rescoring, kind=auto under a memory limit, and the index's checks."""

import json
from pathlib import Path

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

from sbert.embeddings.search import semantic_search  # noqa: E402
from sbert.index import (  # noqa: E402
    COMPRESSED_KINDS,
    MANIFEST_FILE,
    RESCORE_FILE,
    IndexLoadError,
    VectorIndex,
    choose_kind,
    memory_bytes,
    parse_bytes,
    recall_at_k,
)
from sbert.quantization import dequantize_embeddings  # noqa: E402


def clustered(n: int = 3000, dim: int = 32, seed: int = 0) -> np.ndarray:
    """Vectors around 30 centres: like sentence vectors, few directions carry the meaning."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(30, dim))
    return (centres[rng.integers(0, 30, n)] + 0.3 * rng.normal(size=(n, dim))).astype(np.float32)


PARAMS = {"binary_ivf": {"nlist": 16, "nprobe": 16}, "ivfpq": {"nlist": 16, "nprobe": 16, "pq_m": 8}}


@pytest.mark.parametrize("kind", COMPRESSED_KINDS)
def test_rescored_scores_are_the_exact_scores_of_the_pair(kind: str) -> None:
    vectors = clustered()
    queries = vectors[:20] + 0.05
    index = VectorIndex.build(vectors * 3, kind=kind, params=PARAMS.get(kind), rescore="float32")
    exact = semantic_search(queries, vectors, top_k=len(vectors))
    exact_score = [{h.corpus_id: h.score for h in row} for row in exact]
    found = index.search(queries, top_k=10, rescore_multiplier=10)
    for row, truth in zip(found, exact_score):
        assert len(row) == 10 and [h.score for h in row] == sorted((h.score for h in row), reverse=True)
        for hit in row:
            assert hit.score == pytest.approx(truth[hit.corpus_id], abs=1e-5)
    index.params["rescore_multiplier"] = 10
    assert recall_at_k(index, queries, k=10, corpus_embeddings=vectors) >= 0.8


def test_int8_rescoring_scores_with_the_dequantized_vector() -> None:
    vectors = clustered()
    index = VectorIndex.build(vectors, kind="binary", rescore="int8")
    held = index.rescore_vectors
    assert held is not None and held.codes.dtype == np.int8
    query = vectors[0] / np.linalg.norm(vectors[0])
    for hit in index.search(query, top_k=5)[0]:
        stored = dequantize_embeddings(held.codes[hit.corpus_id], "int8", held.ranges)
        assert hit.score == pytest.approx(float(stored @ query), abs=1e-5)
        unit = vectors[hit.corpus_id] / np.linalg.norm(vectors[hit.corpus_id])
        assert hit.score == pytest.approx(float(unit @ query), abs=0.03)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf", "binary", "binary_ivf", "ivfpq"])
def test_results_never_hold_padding(kind: str) -> None:
    vectors = clustered(n=400)
    params = {"nlist": 4, "nprobe": 1, "pq_m": 4} if kind in ("ivf", "binary_ivf", "ivfpq") else None
    index = VectorIndex.build(vectors, kind=kind, params=params, ids=np.arange(400) + 7)
    # One probed list of four holds fewer than 300 vectors: FAISS pads with -1.
    for row in index.search(vectors[:10], top_k=300):
        assert row and all(7 <= h.corpus_id < 407 for h in row)
        assert len({h.corpus_id for h in row}) == len(row)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf", "ivfpq"])
def test_cosine_indexes_use_inner_product_on_unit_vectors(kind: str) -> None:
    vectors = clustered(n=1000)
    params = {"nlist": 8, "nprobe": 8, "pq_m": 8} if kind in ("ivf", "ivfpq") else None
    index = VectorIndex.build(vectors * 5, kind=kind, params=params, rescore="float32")
    assert index.faiss_index.metric_type == faiss.METRIC_INNER_PRODUCT
    stored = index.vectors()
    np.testing.assert_allclose(np.linalg.norm(stored, axis=1), 1.0, atol=0.05 if kind == "ivfpq" else 1e-5)
    best = index.search(vectors[3] * 100, top_k=1)[0][0]
    assert best.corpus_id == 3 and best.score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("kind", COMPRESSED_KINDS)
def test_compressed_round_trip_memory_maps(kind: str, tmp_path: Path) -> None:
    vectors = clustered(n=1000)
    index = VectorIndex.build(
        vectors, kind=kind, params=PARAMS.get(kind), texts=[f"s{i}" for i in range(1000)]
    )
    index.save(tmp_path / "idx")
    loaded = VectorIndex.load(tmp_path / "idx")
    assert isinstance(loaded.rescore_vectors.codes, np.memmap)
    assert loaded.search(vectors[:3], top_k=4) == index.search(vectors[:3], top_k=4)
    assert loaded.text(5) == "s5"


def test_corrupt_rescoring_file_is_named(tmp_path: Path) -> None:
    VectorIndex.build(clustered(n=500), kind="binary").save(tmp_path / "idx")
    path = tmp_path / "idx" / RESCORE_FILE
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexLoadError, match=RESCORE_FILE):
        VectorIndex.load(tmp_path / "idx")


@pytest.mark.parametrize(("edited", "message"), [("hnsw", "IndexFlatIP"), ("quantum", "not an index kind")])
def test_edited_manifest_kind_is_a_clear_error(tmp_path: Path, edited: str, message: str) -> None:
    VectorIndex.build(clustered(n=200), kind="flat").save(tmp_path / "idx")
    manifest_file = tmp_path / "idx" / MANIFEST_FILE
    manifest = json.loads(manifest_file.read_text())
    manifest["kind"] = edited
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(IndexLoadError, match=message):
        VectorIndex.load(tmp_path / "idx")


def test_full_disk_keeps_the_previous_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = clustered(n=300)
    VectorIndex.build(vectors[:100], kind="flat").save(tmp_path / "idx")
    real_write = faiss.write_index
    # FAISS's own writer on a device that is always full: a real ENOSPC from FAISS's fwrite.
    monkeypatch.setattr(faiss, "write_index", lambda index, path: real_write(index, "/dev/full"))
    with pytest.raises(OSError, match="No space left on device.*previous index .* is untouched"):
        VectorIndex.build(vectors, kind="flat").save(tmp_path / "idx")
    monkeypatch.undo()
    assert len(VectorIndex.load(tmp_path / "idx")) == 100
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]


def test_auto_respects_max_memory_and_says_why() -> None:
    assert choose_kind(1_000_000).kind == "hnsw"
    small = choose_kind(1_000_000, dim=384, max_memory=parse_bytes("1G"))
    assert small.kind == "ivfpq" and "(1.0 GiB allowed)" in small.reason
    assert memory_bytes("ivfpq", 40_000_000, 384) <= 8 * 2**30
    with pytest.raises(ValueError, match="no index kind serves 40,000,000"):
        choose_kind(40_000_000, dim=384, max_memory=parse_bytes("512M"))
    index = VectorIndex.build(clustered(n=50), max_memory=parse_bytes("8G"))
    assert index.kind == "flat" and index.choice is not None and "8.0 GiB" in index.choice
    # The index's own size first, not the process's 400 MiB (issue 45: 3 vectors "needed 400 MiB").
    assert choose_kind(3).reason.endswith(": 5 KiB in memory, 400 MiB with the process")


def test_parse_bytes_names_bad_input() -> None:
    assert parse_bytes("1.5G") == 3 * 2**29
    with pytest.raises(ValueError, match="'lots'"):
        parse_bytes("lots")


def test_a_loaded_compressed_index_refuses_to_grow(tmp_path: Path) -> None:
    vectors = clustered(n=300)
    VectorIndex.build(vectors, kind="binary").save(tmp_path / "idx")
    with pytest.raises(ValueError, match="cannot grow"):
        VectorIndex.load(tmp_path / "idx").add(vectors[:5])


@pytest.mark.parametrize("kind", ["binary", "binary_ivf"])
@pytest.mark.parametrize("dim", [5, 20])
def test_a_dimension_not_a_multiple_of_8_pads_the_binary_codes(kind: str, dim: int, tmp_path: Path) -> None:
    # Eight dimensions pack into a byte; the last byte's spare bits are 0 in every code, so they never
    # count in a Hamming distance, and the coarse score is over the dim real bits.
    vectors = clustered(n=300, dim=dim)
    params = {"nlist": 4, "nprobe": 4} if kind == "binary_ivf" else None
    index = VectorIndex.build(vectors, kind=kind, params=params, rescore=None)
    assert index.faiss_index.d == 8 * -(-dim // 8)
    signs = vectors > 0
    for query, row in enumerate(index.search(vectors[:5], top_k=300)):
        distances = (signs[query] != signs).sum(axis=1)
        assert len(row) == 300 and row[0].score == pytest.approx(1.0)
        assert {h.corpus_id: h.score for h in row} == pytest.approx(
            {i: 1 - 2 * d / dim for i, d in enumerate(distances)}
        )
    opposite = index.search(-vectors[:1], top_k=300)[0]
    assert {h.corpus_id: h.score for h in opposite}[0] == pytest.approx(-1.0)
    index.save(tmp_path / "idx")
    assert VectorIndex.load(tmp_path / "idx").search(vectors[:3], top_k=5) == index.search(
        vectors[:3], top_k=5
    )
