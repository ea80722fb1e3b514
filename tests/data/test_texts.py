import io
from pathlib import Path

import pytest

from sbert.data.readers import DataFormatError
from sbert.data.texts import read_texts


def test_txt_keeps_every_line(tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("one\n\nthree\n", encoding="utf-8")
    assert read_texts(tmp_path / "s.txt") == ["one", "", "three"]


def test_jsonl_and_csv_columns(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text('{"text": "a"}\n"b"\n\n{"text": "c"}\n', encoding="utf-8")
    assert read_texts(tmp_path / "s.jsonl") == ["a", "b", "c"]
    (tmp_path / "s.csv").write_text('id,sentence\n1,"x, y"\n2,z\n', encoding="utf-8")
    assert read_texts(tmp_path / "s.csv", column="sentence") == ["x, y", "z"]


def test_errors_name_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"text": "a"}\n{"title": "b"}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.jsonl:2: no string field 'text'"):
        read_texts(tmp_path / "bad.jsonl")
    (tmp_path / "bad.csv").write_text("id,title\n1,x\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.csv:1: header has no column 'text'"):
        read_texts(tmp_path / "bad.csv")


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a\nb\n"))
    assert read_texts("-") == ["a", "b"]
