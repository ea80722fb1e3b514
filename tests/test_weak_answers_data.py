"""``--skip-bad-lines`` skips a line that is not UTF-8 as it skips any other bad line, in every
reader that takes it (issue 54); without it the error names the file, the line and the byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sbert.data.beir import read_beir
from sbert.data.errors import DataFormatError
from sbert.data.nli import read_nli_jsonl
from sbert.data.readers import read_stsb
from sbert.data.training_files import read_positive_pairs_or_triplets, read_scored_pairs

NOT_UTF8 = "Caf\xe9 au lait.".encode("latin-1")  # é as the one byte e9


def _training_file(path: Path) -> Path:
    rows = [
        ("A man sleeps.", "A man rests.", "4.5"),
        ("BAD", "A coffee.", "3.0"),
        ("A dog.", "A cat.", "1.0"),
    ]
    if path.suffix == ".jsonl":
        lines = [json.dumps(dict(zip(("sentence1", "sentence2", "score"), row))).encode() for row in rows]
    else:
        separator = "," if path.suffix == ".csv" else "\t"
        header = ("sentence1", "sentence2", "score")
        lines = [separator.join(row).encode() for row in [header, *rows]]
    path.write_bytes(b"\n".join(lines).replace(b"BAD", NOT_UTF8) + b"\n")
    return path


@pytest.mark.parametrize("name", ["pairs.csv", "pairs.tsv", "pairs.jsonl"])
def test_training_files_skip_a_line_that_is_not_utf8(
    tmp_path: Path, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = _training_file(tmp_path / name)
    bad_line = 2 if name.endswith(".jsonl") else 3
    with pytest.raises(DataFormatError, match=rf"{name}:{bad_line}: not valid UTF-8 \(bytes e9"):
        read_scored_pairs(path)
    with caplog.at_level("WARNING", logger="sbert"):
        pairs = read_scored_pairs(path, skip_bad_lines=True)
    assert [pair.sentence1 for pair in pairs] == ["A man sleeps.", "A dog."]
    assert "skipped 1 bad lines" in caplog.text
    assert [pair.sentence1 for pair in read_positive_pairs_or_triplets(path, skip_bad_lines=True)] == [
        "A man sleeps.",
        "A dog.",
    ]


def test_nli_jsonl_skips_a_line_that_is_not_utf8(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    good = {"sentence1": "A man sleeps.", "sentence2": "A man rests.", "gold_label": "entailment"}
    bad = json.dumps({**good, "sentence1": "BAD"}).encode().replace(b"BAD", NOT_UTF8)
    path = tmp_path / "snli.jsonl"
    path.write_bytes(json.dumps(good).encode() + b"\n" + bad + b"\n" + json.dumps(good).encode() + b"\n")
    with pytest.raises(DataFormatError, match=r"snli.jsonl:2: not valid UTF-8 \(byte 0xe9"):
        read_nli_jsonl(path)
    with caplog.at_level("WARNING", logger="sbert"):
        assert len(read_nli_jsonl(path, skip_bad_lines=True)) == 2
    assert "snli.jsonl: skipped 1 malformed line(s) (first: line 2: not valid UTF-8" in caplog.text


def test_stsb_skips_a_line_that_is_not_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "stsb" / "original"
    folder.mkdir(parents=True)
    rows = [b"g\tf\ty\t1\t4\ta\tb", b"g\tf\ty\t2\t3\t" + NOT_UTF8 + b"\tb", b"g\tf\ty\t3\t2\tc\td"]
    (folder / "sts-dev.csv").write_bytes(b"\r\n".join(rows) + b"\r\n")
    with pytest.raises(DataFormatError, match=r"sts-dev.csv:2: not valid UTF-8"):
        read_stsb("dev", tmp_path)
    pairs = read_stsb("dev", tmp_path, skip_bad_lines=True)
    assert [(p.sentence1, p.sentence2, p.score) for p in pairs] == [("a", "b", 4.0), ("c", "d", 2.0)]


def test_a_beir_corpus_skips_a_line_that_is_not_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "set"
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "text": "rain"}, {"_id": "d2", "text": "BAD"}, {"_id": "d3", "text": "sun"}]
    lines = [json.dumps(doc).encode().replace(b"BAD", NOT_UTF8) for doc in docs]
    (folder / "corpus.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "weather"}) + "\n", encoding="utf-8"
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"corpus.jsonl:2: not valid UTF-8"):
        read_beir(folder)
    assert sorted(read_beir(folder, skip_bad_lines=True).corpus) == ["d1", "d3"]
