import logging
from pathlib import Path

import pytest

from sbert.data import DataFormatError, read_binary_task, read_mrpc, read_sst2, read_trec


def task_dir(root: Path, *parts: str) -> Path:
    folder = root.joinpath("senteval_transfer", *parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_binary_task_labels_by_file_and_skips_blank_lines(tmp_path: Path) -> None:
    folder = task_dir(tmp_path, "CR")
    (folder / "custrev.pos").write_text("great player .\n\nlove it .\n", "utf-8")
    (folder / "custrev.neg").write_text("it broke .\n", "utf-8")
    data = read_binary_task("CR", tmp_path)
    assert [(s.text, s.label) for s in data] == [
        ("great player .", "positive"),
        ("love it .", "positive"),
        ("it broke .", "negative"),
    ]
    kept = read_binary_task("CR", tmp_path, keep_blank_lines=True)  # SentEval's reading
    assert [s.text for s in kept] == ["great player .", "", "love it .", "it broke ."]
    with pytest.raises(ValueError, match="unknown task 'XX'"):
        read_binary_task("XX", tmp_path)


def test_trec_is_latin1_with_coarse_labels(tmp_path: Path) -> None:
    folder = task_dir(tmp_path, "TREC")
    (folder / "train_5500.label").write_bytes(
        "DESC:manner How did serfdom develop ?\nHUM:ind Who is Andr\xe9 ?\n".encode("latin-1")
    )
    data = read_trec("train", tmp_path)
    assert [(s.text, s.label) for s in data] == [
        ("How did serfdom develop ?", "DESC"),
        ("Who is André ?", "HUM"),
    ]


def test_trec_bad_label_and_skip(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = task_dir(tmp_path, "TREC")
    (folder / "TREC_10.label").write_text("NUM:dist How far ?\nWHAT:x Why ?\nLOC:city\n", "latin-1")
    with pytest.raises(DataFormatError, match=r"TREC_10.label:2: label 'WHAT' is not one of"):
        read_trec("test", tmp_path)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        assert [s.label for s in read_trec("test", tmp_path, skip_bad_lines=True)] == ["NUM"]
    assert "skipped 2 malformed line(s)" in caplog.text


def test_sst2_fields_and_labels(tmp_path: Path) -> None:
    folder = task_dir(tmp_path, "SST", "binary")
    (folder / "sentiment-dev").write_text("a charming journey . \t1\nbleak \t0\nno label\n", "utf-8")
    with pytest.raises(DataFormatError, match=r"sentiment-dev:3: expected 2 tab-separated fields, got 1"):
        read_sst2("dev", tmp_path)
    (folder / "sentiment-dev").write_text("a charming journey . \t1\nbleak \t2\n", "utf-8")
    with pytest.raises(DataFormatError, match=r"sentiment-dev:2: label '2' is not 0 or 1"):
        read_sst2("dev", tmp_path)
    assert [(s.text, s.label) for s in read_sst2("dev", tmp_path, skip_bad_lines=True)] == [
        ("a charming journey .", "1")
    ]


def test_mrpc_pairs_with_bom_header(tmp_path: Path) -> None:
    folder = task_dir(tmp_path, "MRPC")
    (folder / "msr_paraphrase_test.txt").write_text(
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t11\t12\tHe said so .\tHe stated it .\n"
        "0\t13\t14\tPrices rose .\tIt rained .\n"
        "2\t15\t16\ta\tb\n",
        "utf-8",
    )
    with pytest.raises(DataFormatError, match=r"msr_paraphrase_test.txt:4: label '2' is not 0 or 1"):
        read_mrpc("test", tmp_path)
    pairs = read_mrpc("test", tmp_path, skip_bad_lines=True)
    assert [(p.sentence1, p.sentence2, p.label) for p in pairs] == [
        ("He said so .", "He stated it .", "1"),
        ("Prices rose .", "It rained .", "0"),
    ]
