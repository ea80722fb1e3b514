from __future__ import annotations

import json
from pathlib import Path

import pytest

from sbert.data import DataFormatError, LabeledPair, NegativesTuple, ScoredPair, Triplet
from sbert.data.training_files import (
    read_anchor_positive_pairs,
    read_labeled_pairs,
    read_negatives_tuples,
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


def test_a_numeric_label_is_the_score_when_there_is_no_score_column(tmp_path: Path) -> None:
    # As `sbert mine-negatives --output-format labeled-pair` writes pairs: 1 a positive, 0 a negative.
    path = write(tmp_path / "mined.csv", "sentence1,sentence2,label\na,b,1\na,c,0\n")
    assert read_scored_pairs(path, (0, 1)) == [ScoredPair("a", "b", 1.0), ScoredPair("a", "c", 0.0)]
    both = write(tmp_path / "both.csv", "sentence1,sentence2,score,label\na,b,4.5,entailment\n")
    assert read_scored_pairs(both) == [ScoredPair("a", "b", 4.5)]
    nli = write(tmp_path / "nli.csv", "sentence1,sentence2,label\na,b,entailment\n")
    with pytest.raises(DataFormatError, match=r"nli.csv:2: label 'entailment' is not a number"):
        read_scored_pairs(nli)


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


def test_several_negatives_are_read_as_tuples(tmp_path: Path) -> None:
    tsv = write(tmp_path / "n.tsv", "anchor\tpositive\tnegative_2\tnegative_1\na\tb\td\tc\n")
    assert read_positive_pairs_or_triplets(tsv) == [NegativesTuple("a", "b", ("c", "d"))]
    lines = ['{"anchor": "a", "positive": "b", "negative_1": "c", "negative_2": "d"}']
    jsonl = write(
        tmp_path / "n.jsonl", "\n".join([*lines, '{"anchor": "e", "positive": "f", "negative_1": "g"}'])
    )
    with pytest.raises(DataFormatError, match=r"n.jsonl:2: 1 negative columns, but the first row has 2"):
        read_negatives_tuples(jsonl)
    assert read_negatives_tuples(jsonl, skip_bad_lines=True) == [NegativesTuple("a", "b", ("c", "d"))]
    empty = write(tmp_path / "m.csv", "anchor,positive,negative_1,negative_2\na,b,c,\n")
    with pytest.raises(DataFormatError, match=r"m.csv:2: negative_2 is missing or empty"):
        read_positive_pairs_or_triplets(empty)
    gap = write(tmp_path / "g.csv", "anchor,positive,negative_1,negative_3\na,b,c,d\n")
    with pytest.raises(DataFormatError, match=r"g.csv:2: .*without gaps, got negative_1, negative_3"):
        read_positive_pairs_or_triplets(gap)
    with pytest.raises(DataFormatError, match=r"n.tsv:2: .*the triplet loss takes one negative"):
        read_triplets(tsv)


def test_anchor_positive_pairs_from_either_column_names(tmp_path: Path) -> None:
    named = write(tmp_path / "a.csv", "anchor,positive,negative\na,b,c\n")
    assert read_anchor_positive_pairs(named) == [("a", "b")]
    nli = write(tmp_path / "s.jsonl", '{"sentence1": "a", "sentence2": "b", "label": "entailment"}\n')
    assert read_anchor_positive_pairs(nli) == [("a", "b")]
    bare = write(tmp_path / "p.tsv", "anchor\tpositive\na\tb\n")
    assert read_positive_pairs_or_triplets(bare) == [LabeledPair("a", "b", "")]
    broken = write(tmp_path / "b.csv", "anchor,positive\na,b\nc,\n")
    with pytest.raises(DataFormatError, match=r"b.csv:3: positive is missing or empty"):
        read_anchor_positive_pairs(broken)


def test_in_batch_negative_pairs_refuse_a_label_that_marks_a_negative(tmp_path: Path) -> None:
    # A labeled-pair file (1 positive, 0 negative) or a full NLI file read as MNRL's positive pairs
    # would train on its negatives as if they were positives: refused, naming the line.
    mined = write(tmp_path / "mined.csv", "sentence1,sentence2,label\na,b,1\na,c,0\n")
    with pytest.raises(DataFormatError, match=r"mined.csv:3: label '0' marks a pair that is not a positive"):
        read_positive_pairs_or_triplets(mined)
    assert read_positive_pairs_or_triplets(mined, skip_bad_lines=True) == [LabeledPair("a", "b", "1")]
    nli = write(tmp_path / "nli.jsonl", '{"sentence1": "a", "sentence2": "b", "label": "contradiction"}\n')
    with pytest.raises(DataFormatError, match=r"nli.jsonl:1: label 'contradiction'"):
        read_positive_pairs_or_triplets(nli)
    positives = "sentence1,sentence2,label\na,b,entailment\nc,d,\n"
    assert len(read_positive_pairs_or_triplets(write(tmp_path / "ok.csv", positives))) == 2
