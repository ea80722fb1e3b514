from __future__ import annotations

import json
from pathlib import Path

import pytest

from sbert.data import DataFormatError, LabeledPair, Triplet
from sbert.data.nli import nli_triplets, read_nli_jsonl


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def snli(s1: str, s2: str, label: str) -> dict[str, str]:
    return {"sentence1": s1, "sentence2": s2, "gold_label": label, "pairID": "x"}


def test_reads_snli_jsonl_and_skips_no_consensus(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "snli_1.0_train.jsonl",
        [
            snli("A man.", "A person.", "entailment"),
            snli("A man.", "A cat.", "-"),
            snli("A dog.", "A cat.", "neutral"),
        ],
    )
    assert read_nli_jsonl(path) == [
        LabeledPair("A man.", "A person.", "entailment"),
        LabeledPair("A dog.", "A cat.", "neutral"),
    ]


def test_bad_label_and_missing_side_name_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "bad.jsonl", [snli("A man.", "A person.", "entailment"), snli("A", "B", "maybe")]
    )
    with pytest.raises(DataFormatError, match=r"bad.jsonl:2: gold_label 'maybe'"):
        read_nli_jsonl(path)
    path = write_jsonl(tmp_path / "side.jsonl", [{"sentence1": "A man.", "gold_label": "entailment"}])
    with pytest.raises(DataFormatError, match=r"side.jsonl:1: sentence2 is missing"):
        read_nli_jsonl(path)


def test_skip_bad_lines_and_empty_set(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mixed.jsonl", [snli("A", "B", "maybe"), snli("A", "C", "contradiction")])
    assert read_nli_jsonl(path, skip_bad_lines=True) == [LabeledPair("A", "C", "contradiction")]
    empty = write_jsonl(tmp_path / "empty.jsonl", [snli("A", "B", "-")])
    with pytest.raises(DataFormatError, match="no labelled pairs"):
        read_nli_jsonl(empty)


def test_triplets_pair_entailment_with_contradiction_of_the_same_premise() -> None:
    pairs = [
        LabeledPair("P1", "E1", "entailment"),
        LabeledPair("P1", "N1", "neutral"),
        LabeledPair("P1", "C1", "contradiction"),
        LabeledPair("P2", "E2", "entailment"),  # no contradiction: no triplet
    ]
    assert nli_triplets(pairs) == [Triplet("P1", "E1", "C1")]
    with pytest.raises(ValueError, match="no triplets"):
        nli_triplets(pairs[3:])
