from __future__ import annotations

import json
from pathlib import Path

import pytest

from sbert.data import DataFormatError, LabeledPair, ScoredPair, Triplet
from sbert.data.training_files import (
    read_labeled_pairs,
    read_positive_pairs_or_triplets,
    read_scored_pairs,
    read_triplets,
)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_scored_pairs_csv_tsv_jsonl(tmp_path: Path) -> None:
    expected = [ScoredPair('A "quoted" man.', "A person.", 4.5)]
    csv_file = write(tmp_path / "p.csv", 'sentence1,sentence2,score\n"A ""quoted"" man.",A person.,4.5\n')
    tsv_file = write(tmp_path / "p.tsv", 'sentence1\tsentence2\tscore\nA "quoted" man.\tA person.\t4.5\n')
    jsonl_file = write(
        tmp_path / "p.jsonl", '{"sentence1": "A \\"quoted\\" man.", "sentence2": "A person.", "score": 4.5}\n'
    )
    for path in (csv_file, tsv_file, jsonl_file):
        assert read_scored_pairs(path) == expected


def test_score_out_of_range_and_missing_side_name_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "p.csv", "sentence1,sentence2,score\na,b,1\nc,d,7\n")
    with pytest.raises(DataFormatError, match=r"p.csv:3: score 7 is outside 0-5"):
        read_scored_pairs(path)
    assert read_scored_pairs(path, score_range=(0, 10))[1].score == 7.0
    assert read_scored_pairs(path, skip_bad_lines=True) == [ScoredPair("a", "b", 1.0)]
    path = write(tmp_path / "q.tsv", "sentence1\tsentence2\tscore\na\t\t1\n")
    with pytest.raises(DataFormatError, match=r"q.tsv:2: sentence2 is missing or empty"):
        read_scored_pairs(path)


def test_labels_outside_the_set_and_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "l.csv", "sentence1,sentence2,label\na,b,yes\nc,d,perhaps\n")
    with pytest.raises(DataFormatError, match=r"l.csv:3: label 'perhaps' is not one of yes, no"):
        read_labeled_pairs(path, labels=["yes", "no"])
    assert read_labeled_pairs(path)[1] == LabeledPair("c", "d", "perhaps")
    empty = write(tmp_path / "e.csv", "sentence1,sentence2,label\n")
    with pytest.raises(DataFormatError, match="empty data set"):
        read_labeled_pairs(empty)


def test_triplets_and_positive_pairs(tmp_path: Path) -> None:
    triplets = write(tmp_path / "t.jsonl", '{"anchor": "a", "positive": "b", "negative": "c"}\n')
    assert read_triplets(triplets) == [Triplet("a", "b", "c")]
    assert read_positive_pairs_or_triplets(triplets) == [Triplet("a", "b", "c")]
    pairs = write(tmp_path / "p.csv", "sentence1,sentence2\na,b\n")
    assert read_positive_pairs_or_triplets(pairs) == [LabeledPair("a", "b", "")]
    with pytest.raises(ValueError, match="format"):
        read_triplets(write(tmp_path / "t.txt", "x"))


@pytest.mark.parametrize("name", ["pairs.csv", "pairs.tsv", "pairs.jsonl"])
def test_bytes_that_are_not_utf8_name_file_and_line(tmp_path: Path, name: str) -> None:
    rows = [("A man sleeps.", "A man rests.", "4.5"), ("Caf\xe9 au lait.", "A coffee.", "3.0")]
    if name.endswith(".jsonl"):
        lines = [
            json.dumps(dict(zip(("sentence1", "sentence2", "score"), row)), ensure_ascii=False)
            for row in rows
        ]
    else:
        separator = "," if name.endswith(".csv") else "\t"
        lines = [separator.join(row) for row in [("sentence1", "sentence2", "score"), *rows]]
    path = tmp_path / name
    path.write_bytes("\n".join([*lines, ""]).encode("latin-1"))  # é is the one byte e9: not UTF-8
    with pytest.raises(DataFormatError, match=rf"{name}:{len(lines)}: not valid UTF-8 \(bytes e9"):
        read_scored_pairs(path)
    with pytest.raises(DataFormatError, match=rf"{name}:{len(lines)}: not valid UTF-8"):
        read_positive_pairs_or_triplets(path)
