"""encode_corpus and ``sbert encode DIR/``: streaming, resume, refusals and bad input."""

from __future__ import annotations

import errno
import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sbert.cli import main
from sbert.data.errors import DataFormatError
from sbert.store import CorpusOptions, EmbeddingStore, StoreDiskFullError, StoreError, encode_corpus

WORDS = ["dog", "cat", "runs", "the", "park", "plays", "guitar", "happy", "red", "car"]


def sentences(count: int) -> list[str]:
    rng = np.random.default_rng(1)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 12)))) for _ in range(count)]


def store_files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.glob("shard-*.parquet"))}


def cli(model_dir: Path, *args: str) -> int:
    return main(
        [
            "encode",
            *args,
            "--model",
            str(model_dir),
            "--precision",
            "float32",
            "--backend",
            "torch",
            "--no-progress",
        ]
    )


def test_streamed_store_equals_in_memory_encode(tmp_path: Path, tiny_encoder) -> None:  # type: ignore[no-untyped-def]
    texts = sentences(230)
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    store = encode_corpus(
        tiny_encoder,
        tmp_path / "in.txt",
        tmp_path / "s",
        CorpusOptions(shard_size=100, chunk_rows=40, show_progress=False),
    )
    expected = tiny_encoder.encode(texts, show_progress_bar=False)
    assert [(s.start, s.stop) for s in store.shards] == [(0, 100), (100, 200), (200, 230)]
    assert np.abs(store.vectors(np.arange(230)) - expected).max() <= 1e-6
    assert store.texts([0, 229]) == [texts[0], texts[229]]
    assert store.identity.fingerprint == store.manifest["model"]["fingerprint"]
    assert store.manifest["input"]["sha256"] and store.manifest["complete"]
    # an in-memory iterable streams the same vectors
    again = encode_corpus(
        tiny_encoder,
        iter(texts),
        tmp_path / "t",
        CorpusOptions(shard_size=100, chunk_rows=40, show_progress=False),
    )
    np.testing.assert_array_equal(again.vectors(np.arange(230)), store.vectors(np.arange(230)))


def test_jsonl_csv_and_parquet_inputs_with_ids(tmp_path: Path, tiny_encoder) -> None:  # type: ignore[no-untyped-def]
    texts = sentences(12)
    ids = [100 + 7 * i for i in range(12)]
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"doc": i, "body": t}) + "\n" for i, t in zip(ids, texts)), encoding="utf-8"
    )
    (tmp_path / "in.csv").write_text("doc,body\n" + "".join(f'{i},"{t}"\n' for i, t in zip(ids, texts)))
    pq.write_table(pa.table({"doc": ids, "body": texts}), tmp_path / "in.parquet")
    reference = tiny_encoder.encode(texts, show_progress_bar=False)
    for name in ("in.jsonl", "in.csv", "in.parquet"):
        store = encode_corpus(
            tiny_encoder,
            tmp_path / name,
            tmp_path / f"s-{name}",
            CorpusOptions(column="body", id_column="doc", shard_size=5, show_progress=False),
        )
        assert store.texts([107, 100]) == [texts[1], texts[0]], name
        np.testing.assert_allclose(store.vectors(store.rows_of([177])), reference[[11]], atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_compact_dtypes(tmp_path: Path, tiny_encoder, dtype: str) -> None:  # type: ignore[no-untyped-def]
    texts = sentences(60)
    store = encode_corpus(
        tiny_encoder,
        texts,
        tmp_path / "s",
        CorpusOptions(shard_size=25, chunk_rows=20, dtype=dtype, show_progress=False),
    )
    assert store.vectors([0]).dtype == dtype
    ranges = store.quantization_ranges
    if dtype == "int8":  # calibrated on the first chunk, recorded once
        first = tiny_encoder.encode(texts[:20], show_progress_bar=False)
        np.testing.assert_array_equal(ranges.minimum, first.min(axis=0))
    else:
        assert ranges is None


def test_resume_refuses_a_changed_input_precision_or_model(tmp_path: Path, tiny_model_dir: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(sentences(30)) + "\n", encoding="utf-8")
    out = str(tmp_path / "s") + "/"
    assert cli(tiny_model_dir, str(source), "-o", out, "--shard-size", "10") == 0
    before = store_files(tmp_path / "s")
    assert cli(tiny_model_dir, str(source), "-o", out, "--shard-size", "10") == 0  # complete: nothing to do
    assert store_files(tmp_path / "s") == before
    with pytest.raises(StoreError, match=r"dtype 'float32' vs 'int8'"):
        encode_corpus_cli(tiny_model_dir, source, out, dtype="int8")
    source.write_text("\n".join(sentences(31)) + "\n", encoding="utf-8")
    with pytest.raises(StoreError, match=r"input sha256 '"):
        encode_corpus_cli(tiny_model_dir, source, out)
    from sbert import SentenceEncoder
    from sbert.embeddings.identity import ModelMismatchError

    other = SentenceEncoder.from_pretrained(
        tiny_model_dir, pooling="cls", device="cpu", precision="float32", backend="torch"
    )
    source.write_text("\n".join(sentences(30)) + "\n", encoding="utf-8")
    with pytest.raises(ModelMismatchError, match=r"pooling 'mean' vs 'cls'"):
        encode_corpus(other, source, out, CorpusOptions(shard_size=10, show_progress=False))
    assert (
        cli(tiny_model_dir, str(source), "-o", out, "--shard-size", "10", "--dtype", "int8", "--overwrite")
        == 0
    )
    assert EmbeddingStore.open(out).dtype == "int8"


def encode_corpus_cli(model_dir: Path, source: Path, out: str, dtype: str = "float32") -> EmbeddingStore:
    from sbert import SentenceEncoder

    model = SentenceEncoder.from_pretrained(model_dir, device="cpu", precision="float32", backend="torch")
    return encode_corpus(model, source, out, CorpusOptions(shard_size=10, dtype=dtype, show_progress=False))


def test_a_full_disk_stops_cleanly_and_resumes(
    tmp_path: Path, tiny_encoder, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    texts = sentences(50)
    reference = encode_corpus(
        tiny_encoder, texts, tmp_path / "ref", CorpusOptions(shard_size=10, show_progress=False)
    )
    calls = {"n": 0}
    original = pq.ParquetWriter.write_table

    def fill_up(self, table, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", fill_up)
    with pytest.raises(
        StoreDiskFullError,
        match=r"disk full while writing shard-00002.parquet.*2 finished shard\(s\) \(20 rows\) are intact",
    ):
        encode_corpus(tiny_encoder, texts, tmp_path / "s", CorpusOptions(shard_size=10, show_progress=False))
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "manifest.json",
        "shard-00000.parquet",
        "shard-00001.parquet",
    ]
    monkeypatch.setattr(pq.ParquetWriter, "write_table", original)
    encode_corpus(tiny_encoder, texts, tmp_path / "s", CorpusOptions(shard_size=10, show_progress=False))
    assert store_files(tmp_path / "s") == store_files(tmp_path / "ref")
    assert len(reference) == 50


def test_bad_lines_are_named_or_skipped_and_counted(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.txt").write_bytes(b"good one\nbad \xff byte\n\nlast\n")
    assert cli(tiny_model_dir, str(tmp_path / "bad.txt"), "-o", str(tmp_path / "s/")) == 1
    assert "bad.txt:2: not valid UTF-8 (byte 0xff at column 5)" in capsys.readouterr().err
    assert cli(tiny_model_dir, str(tmp_path / "bad.txt"), "-o", str(tmp_path / "s/"), "--skip-bad-lines") == 0
    store = EmbeddingStore.open(str(tmp_path / "s"))
    assert store.texts([0, 1, 2]) == ["good one", "", "last"]  # an empty text gets its vector
    assert store.manifest["skipped_lines"] == 1
    (tmp_path / "bad.jsonl").write_text('{"text": "a"}\n{"text": 5}\nnot json\n', encoding="utf-8")
    assert cli(tiny_model_dir, str(tmp_path / "bad.jsonl"), "-o", str(tmp_path / "j/")) == 1
    assert "bad.jsonl:2: no string field 'text'" in capsys.readouterr().err
    (tmp_path / "ids.jsonl").write_text(
        '{"text": "a", "id": 1}\n{"text": "b", "id": "x7"}\n', encoding="utf-8"
    )
    assert (
        cli(tiny_model_dir, str(tmp_path / "ids.jsonl"), "-o", str(tmp_path / "i/"), "--id-column", "id") == 1
    )
    assert "ids.jsonl:2: id column 'id' holds 'x7', not an integer" in capsys.readouterr().err
    (tmp_path / "in.csv").write_text("title\nx\n", encoding="utf-8")
    assert cli(tiny_model_dir, str(tmp_path / "in.csv"), "-o", str(tmp_path / "c/")) == 1
    assert "in.csv:1: header has no column 'text'" in capsys.readouterr().err


def test_stdin_follows_the_same_utf8_rule(
    tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A C-locale stdin decodes with surrogateescape: invalid bytes used to become surrogates silently.
    stdin = io.TextIOWrapper(io.BytesIO(b"fine\nbad \xff\n"), encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr("sys.stdin", stdin)
    assert cli(tiny_model_dir, "-", "-o", str(tmp_path / "out.npy")) == 1
    assert "<stdin>:2: not valid UTF-8" in capsys.readouterr().err
    with pytest.raises(DataFormatError, match=r"<stdin>:2"):
        from sbert.data.texts import read_texts

        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a\n\xfe\n"), errors="surrogateescape"))
        read_texts("-")


def test_output_is_checked_before_the_model_is_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in.txt").write_text("a\n", encoding="utf-8")
    missing_model = tmp_path / "no-such-model"
    (tmp_path / "blocker").write_text("a file, not a folder")
    for output, message in [
        (tmp_path / "out.txt", "use DIR/ (an embedding store), OUT.npy or OUT.jsonl"),
        (tmp_path / "blocker" / "out.npy", "cannot write in"),
    ]:
        assert (
            main(["encode", str(tmp_path / "in.txt"), "-o", str(output), "--model", str(missing_model)]) == 1
        )
        assert message in capsys.readouterr().err
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    assert (
        main(
            [
                "encode",
                str(tmp_path / "in.txt"),
                "-o",
                str(tmp_path / "photos"),
                "--model",
                str(missing_model),
                "--overwrite",
            ]
        )
        == 1
    )
    assert "holds no sbert store" in capsys.readouterr().err
    assert (tmp_path / "photos" / "cat.jpg").read_bytes() == b"\xff\xd8"


def test_any_pyarrow_filesystem(tmp_path: Path, tiny_encoder) -> None:  # type: ignore[no-untyped-def]
    from pyarrow import fs as pafs

    remote = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())  # not memory-mappable
    texts = sentences(30)
    store = encode_corpus(
        tiny_encoder,
        texts,
        "bucket/vectors",
        CorpusOptions(filesystem=remote, shard_size=8, show_progress=False),
    )
    assert (tmp_path / "bucket" / "vectors" / "manifest.json").exists()
    again = EmbeddingStore.open("bucket/vectors", filesystem=remote)
    np.testing.assert_array_equal(again.vectors([29, 3]), store.vectors([29, 3]))
    assert again.texts([29]) == [texts[29]]
    again.verify()


def test_the_prompt_is_applied_recorded_and_must_match_to_resume(tmp_path: Path, prompted_dir: Path) -> None:
    from sbert import SentenceEncoder

    model = SentenceEncoder.from_pretrained(prompted_dir, device="cpu", precision="float32", backend="torch")
    texts = sentences(12)
    out = str(tmp_path / "s") + "/"
    store = encode_corpus(
        model, texts, out, CorpusOptions(shard_size=5, prompt_name="document", show_progress=False)
    )
    assert store.manifest["prompt"] == "passage: "
    np.testing.assert_allclose(store.vectors(np.arange(12)), model.encode_document(texts), atol=1e-6)
    with pytest.raises(StoreError, match=r"prompt 'passage: ' vs 'query: '"):
        encode_corpus(
            model, texts, out, CorpusOptions(shard_size=5, show_progress=False)
        )  # the default prompt: query
