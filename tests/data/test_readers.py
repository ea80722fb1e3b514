from pathlib import Path

import pytest

from sbert.data import DataFormatError, read_snli_senteval, read_stsb


def test_stsb_ignores_trailing_fields(tmp_path: Path) -> None:
    folder = tmp_path / "stsb" / "original"
    folder.mkdir(parents=True)
    (folder / "sts-test.csv").write_text(
        'main\tfile\t2012\t1\t4.5\tA "quoted" man.\tA man.\n'
        "main\tfile\t2012\t2\t0.0\tB\tC\tsource1\tsource2\n",
        encoding="utf-8",
    )
    pairs = read_stsb("test", tmp_path)
    assert [(p.sentence1, p.sentence2, p.score) for p in pairs] == [
        ('A "quoted" man.', "A man.", 4.5),
        ("B", "C", 0.0),
    ]


def test_stsb_bad_score_names_line(tmp_path: Path) -> None:
    folder = tmp_path / "stsb" / "original"
    folder.mkdir(parents=True)
    (folder / "sts-dev.csv").write_text("g\tf\ty\t1\t4\ta\tb\ng\tf\ty\t2\t7.5\ta\tb\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"sts-dev.csv:2: score 7.5 is outside 0-5"):
        read_stsb("dev", tmp_path)


def test_missing_data_names_path_and_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(FileNotFoundError, match=r"STSb train: .*sts-train.csv not found"):
        read_stsb("train", tmp_path)
    monkeypatch.delenv("SBERT_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="SBERT_DATA"):
        read_stsb("train")


def test_snli_senteval(tmp_path: Path) -> None:
    folder = tmp_path / "snli_senteval"
    folder.mkdir()
    (folder / "s1.dev").write_text("A man sleeps.\nA dog runs.\n")
    (folder / "s2.dev").write_text("A person rests.\nA cat sits.\n")
    (folder / "labels.dev").write_text("entailment\ncontradiction\n")
    pairs = read_snli_senteval("dev", tmp_path)
    assert [p.label for p in pairs] == ["entailment", "contradiction"]
    (folder / "labels.dev").write_text("entailment\nmaybe\n")
    with pytest.raises(DataFormatError, match=r"labels.dev:2: label 'maybe'"):
        read_snli_senteval("dev", tmp_path)


def test_stsb_skip_bad_lines_keeps_good_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "stsb" / "original"
    folder.mkdir(parents=True)
    (folder / "sts-dev.csv").write_text("g\tf\ty\t1\t4\ta\tb\ng\tf\ty\t2\tx\ta\tb\nshort\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="sbert"):
        pairs = read_stsb("dev", tmp_path, skip_bad_lines=True)
    assert [(p.sentence1, p.score) for p in pairs] == [("a", 4.0)]
    assert (
        "sts-dev.csv: skipped 2 malformed line(s) (first: line 2: score 'x' is not a number)" in caplog.text
    )
