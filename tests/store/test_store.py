"""The store format: writer and reader round trip, pyarrow alone, random access, checksums, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from sbert.store import EmbeddingStore, StoreError, StoreWriter

IDENTITY = {"name": "test", "source": None, "fingerprint": "f" * 64, "pipeline": {"pooling": "mean"}}


def write_store(
    path: Path, vectors: np.ndarray, shard_size: int, ids: np.ndarray | None = None, **settings: object
) -> None:
    texts = [f"sentence {i}" for i in range(len(vectors))]
    ids = np.arange(len(vectors)) if ids is None else ids
    base = {"dim": vectors.shape[1], "dtype": str(vectors.dtype), "normalized": False, "model": IDENTITY}
    writer = StoreWriter.open(str(path), {**base, "row_group_size": 4, **settings})
    for start in range(0, len(vectors), shard_size):
        with writer.shard() as shard:
            part = slice(start, start + shard_size)
            shard.write(ids[part], texts[part], vectors[part])
    writer.finish()


@pytest.fixture()
def vectors() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(23, 6)).astype(np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_round_trip_in_batches_and_by_row(tmp_path: Path, vectors: np.ndarray, dtype: str) -> None:
    data = (vectors * 20).astype(dtype)
    write_store(tmp_path / "s", data, shard_size=10)
    store = EmbeddingStore.open(str(tmp_path / "s"))
    assert (len(store), store.dim, store.dtype, store.normalized) == (23, 6, dtype, False)
    assert store.identity.fingerprint == "f" * 64
    assert [(s.start, s.stop) for s in store.shards] == [(0, 10), (10, 20), (20, 23)]
    batches = list(store.iter_batches(batch_rows=7))
    assert all(len(b.ids) <= 7 for b in batches)
    np.testing.assert_array_equal(np.concatenate([b.vectors for b in batches]), data)
    np.testing.assert_array_equal(np.concatenate([b.ids for b in batches]), np.arange(23))
    assert [b.start for b in batches][:3] == [0, 7, 10]
    rows = np.array([22, 0, 13, 5, 13])
    np.testing.assert_array_equal(store.vectors(rows), data[rows])
    assert store.vectors(rows).dtype == dtype
    np.testing.assert_array_equal(store.ids(rows), rows)
    assert store.texts([3, 21]) == ["sentence 3", "sentence 21"]
    assert store.vectors([]).shape == (0, 6)
    store.verify()


def test_pyarrow_alone_reads_the_store(tmp_path: Path, vectors: np.ndarray) -> None:
    write_store(tmp_path / "s", vectors, shard_size=10)
    files = sorted(str(path) for path in (tmp_path / "s").glob("*.parquet"))  # names sort in row order
    table = ds.dataset(files, format="parquet").to_table()
    assert table.column_names == ["id", "text", "embedding"]
    matrix = np.stack(table.column("embedding").to_pylist())
    np.testing.assert_array_equal(matrix, vectors)
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert [shard["file"] for shard in manifest["shards"]] == [
        "shard-00000.parquet",
        "shard-00001.parquet",
        "shard-00002.parquet",
    ]
    assert pq.ParquetFile(tmp_path / "s" / "shard-00000.parquet").metadata.num_row_groups == 3


def test_ids_from_a_column_are_looked_up(tmp_path: Path, vectors: np.ndarray) -> None:
    ids = np.arange(len(vectors))[::-1] * 10 + 1000
    write_store(tmp_path / "s", vectors, shard_size=10, ids=ids, id_column="doc_id")
    store = EmbeddingStore.open(str(tmp_path / "s"))
    assert store.texts([1000, 1220]) == ["sentence 22", "sentence 0"]
    np.testing.assert_array_equal(store.rows_of([1010]), [21])
    with pytest.raises(KeyError, match="no row with id 5"):
        store.texts([5])


def test_unknown_row_and_id_are_named(tmp_path: Path, vectors: np.ndarray) -> None:
    write_store(tmp_path / "s", vectors, shard_size=10)
    store = EmbeddingStore.open(str(tmp_path / "s"))
    with pytest.raises(IndexError, match="row 23"):
        store.vectors([1, 23])
    with pytest.raises(KeyError, match="no row with id -1"):
        store.texts([-1])


def test_verify_names_a_changed_shard(tmp_path: Path, vectors: np.ndarray) -> None:
    write_store(tmp_path / "s", vectors, shard_size=10)
    shard = tmp_path / "s" / "shard-00001.parquet"
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="shard-00001.parquet: checksum mismatch"):
        EmbeddingStore.open(str(tmp_path / "s")).verify()


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "not valid JSON"), ('{"format": "other"}', "not an sbert embedding store manifest")],
)
def test_corrupt_manifest_is_named(tmp_path: Path, vectors: np.ndarray, content: str, message: str) -> None:
    write_store(tmp_path / "s", vectors, shard_size=10)
    (tmp_path / "s" / "manifest.json").write_text(content)
    with pytest.raises(StoreError, match=f"manifest.json: {message}"):
        EmbeddingStore.open(str(tmp_path / "s"))


def test_missing_store_and_unfinished_store_are_refused(tmp_path: Path, vectors: np.ndarray) -> None:
    with pytest.raises(StoreError, match="not an sbert embedding store"):
        EmbeddingStore.open(str(tmp_path))
    base = {"dim": 6, "dtype": "float32", "normalized": False, "model": IDENTITY}
    writer = StoreWriter.open(str(tmp_path / "s"), base)
    with writer.shard() as shard:
        shard.write(np.arange(3), ["a", "b", "c"], vectors[:3])
    with pytest.raises(StoreError, match="unfinished"):
        EmbeddingStore.open(str(tmp_path / "s"))
    assert len(EmbeddingStore.open(str(tmp_path / "s"), allow_incomplete=True)) == 3


def test_a_directory_holding_other_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    base = {"dim": 6, "dtype": "float32", "normalized": False, "model": IDENTITY}
    with pytest.raises(StoreError, match="holds no sbert store"):
        StoreWriter.open(str(tmp_path), base, overwrite=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_failed_shard_leaves_no_file_and_the_manifest_unchanged(
    tmp_path: Path, vectors: np.ndarray
) -> None:
    base = {"dim": 6, "dtype": "float32", "normalized": False, "model": IDENTITY}
    writer = StoreWriter.open(str(tmp_path / "s"), base)
    with pytest.raises(RuntimeError), writer.shard() as shard:
        shard.write(np.arange(3), ["a", "b", "c"], vectors[:3])
        raise RuntimeError("killed")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["manifest.json"]
    assert json.loads((tmp_path / "s" / "manifest.json").read_text())["rows"] == 0
