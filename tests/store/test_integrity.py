"""A store's checksums are checked when it is read and when a run resumes it: no wrong vector is
ever returned from a damaged shard, and a damaged store is never marked complete."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from tests.store.test_corpus import cli, sentences, store_files
from tests.store.test_store import write_store

from sbert.cli import main
from sbert.store import CorpusOptions, EmbeddingStore, StoreError, encode_corpus


def flip_byte(path: Path, offset: int = 200) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture()
def vectors() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(23, 6)).astype(np.float32)


def test_a_flipped_byte_in_a_finished_shard_is_named_by_every_read(
    tmp_path: Path, vectors: np.ndarray
) -> None:
    write_store(tmp_path / "s", vectors, shard_size=10)
    flip_byte(tmp_path / "s" / "shard-00001.parquet")
    reads = {
        "vectors": lambda store: store.vectors([12]),
        "texts": lambda store: store.texts([12]),
        "iter_batches": lambda store: list(store.iter_batches(5)),
    }
    for what, read in reads.items():
        store = EmbeddingStore.open(str(tmp_path / "s"))
        np.testing.assert_array_equal(store.vectors([3]), vectors[[3]])  # shard 0 is intact
        with pytest.raises(StoreError, match=r"shard-00001\.parquet: checksum mismatch"):
            read(store)
        assert what  # each read path is refused, not only the first


def test_arrow_errors_name_the_shard_when_unverified(tmp_path: Path, vectors: np.ndarray) -> None:
    write_store(tmp_path / "s", vectors, shard_size=10)
    (tmp_path / "s" / "shard-00002.parquet").write_bytes(b"not parquet at all")
    store = EmbeddingStore.open(str(tmp_path / "s"), verify=False)
    np.testing.assert_array_equal(store.vectors([0, 15]), vectors[[0, 15]])  # untouched shards read
    with pytest.raises(StoreError, match=r"shard-00002\.parquet: cannot read the shard"):
        store.vectors([21])


def test_the_store_digest_follows_its_bytes(tmp_path: Path, vectors: np.ndarray) -> None:
    write_store(tmp_path / "a", vectors, shard_size=10)
    write_store(tmp_path / "b", vectors, shard_size=10)
    write_store(tmp_path / "c", vectors * 2, shard_size=10)
    digests = [EmbeddingStore.open(str(tmp_path / name)).digest for name in "abc"]
    assert digests[0] == digests[1] != digests[2]


def test_a_resume_rechecks_finished_shards_and_encodes_a_damaged_one_again(
    tmp_path: Path, tiny_encoder, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    texts = sentences(230)
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    run = {"shard_size": 100, "chunk_rows": 40, "show_progress": False}
    encode_corpus(tiny_encoder, tmp_path / "in.txt", tmp_path / "s", CorpusOptions(**run))
    original = store_files(tmp_path / "s")
    flip_byte(tmp_path / "s" / "shard-00001.parquet")
    with caplog.at_level(logging.WARNING, logger="sbert"):
        store = encode_corpus(tiny_encoder, tmp_path / "in.txt", tmp_path / "s", CorpusOptions(**run))
    assert "shard-00001.parquet: missing or damaged" in caplog.text
    assert store.manifest["complete"] and len(store) == 230
    assert store_files(tmp_path / "s") == original  # encoded again, byte for byte
    store.verify()


def test_a_corrected_input_runs_after_a_bad_utf8_failure(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in.txt").write_bytes(b"good one\nbad \xff byte\n")
    assert cli(tiny_model_dir, str(tmp_path / "in.txt"), "-o", str(tmp_path / "s/")) == 1
    assert "in.txt:2: not valid UTF-8" in capsys.readouterr().err
    (tmp_path / "in.txt").write_bytes(b"good one\nbad byte fixed\n")
    assert cli(tiny_model_dir, str(tmp_path / "in.txt"), "-o", str(tmp_path / "s/")) == 0
    assert EmbeddingStore.open(str(tmp_path / "s")).texts([1]) == ["bad byte fixed"]


def test_index_build_from_a_damaged_store_names_the_shard(
    tmp_path: Path, vectors: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("faiss")
    write_store(tmp_path / "s", vectors, shard_size=10)
    flip_byte(tmp_path / "s" / "shard-00002.parquet")
    code = main(
        ["index", "build", "--store", str(tmp_path / "s"), "-o", str(tmp_path / "idx"), "--kind", "flat"]
    )
    assert code == 1
    assert "shard-00002.parquet: checksum mismatch" in capsys.readouterr().err
    assert not (tmp_path / "idx").exists()
