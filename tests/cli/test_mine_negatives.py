"""``sbert mine-negatives`` end to end on a tiny random BERT: its file is what the library mined, and
``sbert train file`` trains on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sbert import SentenceEncoder
from sbert.applications.hard_negatives import MiningOptions, mine_hard_negatives
from sbert.cli import main
from sbert.data.training_files import read_anchor_positive_pairs, read_negatives_tuples, read_scored_pairs

TEXTS = [
    "a man plays guitar", "a man plays music", "a dog runs in the park", "the red car",
    "a woman cooks food", "a woman is eating", "the sun and rain", "a small blue rocket",
    "a cat is sad", "the child is happy", "code and test", "a big bug",
]  # fmt: skip


@pytest.fixture()
def pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.csv"
    path.write_text("anchor,positive\n" + "".join(f"{a},{b}\n" for a, b in zip(TEXTS[::2], TEXTS[1::2])))
    return path


def model_args(model_dir: Path) -> list[str]:
    return ["--model", str(model_dir), "--device", "cpu", "--precision", "float32", "--backend", "torch"]


def test_the_file_holds_what_the_library_mines_and_trains(
    pairs_file: Path, trainable_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "mined.tsv"
    argv = ["mine-negatives", str(pairs_file), "-o", str(output), "--num-negatives", "2"]
    assert main([*argv, *model_args(trainable_model_dir)]) == 0
    model = SentenceEncoder.from_pretrained(
        trainable_model_dir, device="cpu", precision="float32", backend="torch"
    )
    expected = mine_hard_negatives(
        read_anchor_positive_pairs(pairs_file), model, MiningOptions(num_negatives=2)
    )
    assert read_negatives_tuples(output) == expected.examples()
    assert output.read_text().splitlines()[0] == "anchor\tpositive\tnegative_1\tnegative_2"

    monkeypatch.delenv("SBERT_DATA", raising=False)
    trained = tmp_path / "trained"
    argv = ["train", "file", "--train", str(output), "--loss", "mnrl", "--base", str(trainable_model_dir)]
    argv += ["--output", str(trained), "--batch-size", "3", "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    assert json.loads((trained / "results.json").read_text())["steps"] == 2


def test_triplet_format_and_an_extra_corpus(pairs_file: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a man eats food\nthe blue sun\n")
    output = tmp_path / "mined.jsonl"
    argv = ["mine-negatives", str(pairs_file), "-o", str(output), "--output-format", "triplet"]
    argv += ["--corpus", str(corpus), "--num-negatives", "3", "--index-kind", "flat"]
    assert main([*argv, *model_args(tiny_model_dir)]) == 0
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(rows) == 3 * len(TEXTS) // 2 and set(rows[0]) == {"anchor", "positive", "negative"}
    assert {"a man eats food", "the blue sun"} & {row["negative"] for row in rows}


def test_a_labeled_pair_file_trains_a_pair_loss_as_it_is(
    pairs_file: Path, trainable_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "mined.csv"
    argv = ["mine-negatives", str(pairs_file), "-o", str(output), "--output-format", "labeled-pair"]
    assert main([*argv, "--num-negatives", "2", *model_args(trainable_model_dir)]) == 0
    model = SentenceEncoder.from_pretrained(
        trainable_model_dir, device="cpu", precision="float32", backend="torch"
    )
    pairs = read_anchor_positive_pairs(pairs_file)
    expected = mine_hard_negatives(pairs, model, MiningOptions(num_negatives=2, output_format="labeled-pair"))
    assert read_scored_pairs(output, (0.0, 1.0)) == expected.examples()
    assert len(expected.examples()) == 3 * len(pairs)  # a positive and two negatives per anchor

    monkeypatch.delenv("SBERT_DATA", raising=False)
    trained = tmp_path / "trained"
    argv = ["train", "file", "--train", str(output), "--loss", "cosent", "--base", str(trainable_model_dir)]
    argv += ["--output", str(trained), "--batch-size", "18", "--no-progress", "--device", "cpu"]
    assert main([*argv, "--dev", str(output), "--score-range", "0", "1"]) == 0
    assert json.loads((trained / "results.json").read_text())["steps"] == 1


def test_labeled_lists_are_written_as_jsonl_only(
    pairs_file: Path, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["mine-negatives", str(pairs_file), "--output-format", "labeled-list", *model_args(tiny_model_dir)]
    assert main([*argv, "-o", str(tmp_path / "lists.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "lists.jsonl").read_text().splitlines()]
    assert len(rows) == len(TEXTS) // 2 and rows[0]["labels"] == [1, 0, 0, 0]
    assert rows[0]["passages"][0] == TEXTS[1]
    capsys.readouterr()
    assert main([*argv, "-o", str(tmp_path / "lists.csv")]) == 1
    error = capsys.readouterr().err
    assert "lists.csv: labeled-list rows hold lists of passages and labels" in error
    assert "Encoding" not in error  # refused before any work


def test_bad_input_and_output_are_clear_errors(
    pairs_file: Path, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("anchor,positive\na man,a person\nthe dog,\n")
    assert (
        main(["mine-negatives", str(bad), "-o", str(tmp_path / "out.csv"), *model_args(tiny_model_dir)]) == 1
    )
    assert "bad.csv:3: positive is missing or empty" in capsys.readouterr().err
    argv = ["mine-negatives", str(pairs_file), "-o", str(tmp_path / "out.txt"), *model_args(tiny_model_dir)]
    assert main(argv) == 1
    assert "out.txt: cannot tell the format" in capsys.readouterr().err
    argv = ["mine-negatives", str(pairs_file), "-o", str(tmp_path / "o.csv"), "--max-score", "-1"]
    assert main([*argv, *model_args(tiny_model_dir)]) == 1
    assert "no anchor got 3 negatives" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_a_cross_encoder_judges_the_filters(
    pairs_file: Path, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    from sbert.cross_encoder import CrossEncoder

    torch.manual_seed(0)
    judge = CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu")
    judge.save(tmp_path / "ce")
    output = tmp_path / "mined.csv"
    argv = ["mine-negatives", str(pairs_file), "-o", str(output), "--cross-encoder", str(tmp_path / "ce")]
    argv += ["--num-negatives", "1", *model_args(tiny_model_dir)]
    assert main(argv) == 1
    assert "only judges the filters" in capsys.readouterr().err
    assert main([*argv, "--max-score", "1.0"]) == 0
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    expected = mine_hard_negatives(
        read_anchor_positive_pairs(pairs_file),
        model,
        MiningOptions(max_score=1.0, num_negatives=1),
        cross_encoder=judge,
    )
    rows = output.read_text().splitlines()
    assert rows[0] == "anchor,positive,negative_1" and len(rows) == 1 + len(expected.rows)
    assert rows[1].endswith(expected.rows[0].negatives[0])


def test_a_saved_index_is_the_corpus(
    pairs_file: Path, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join([*TEXTS[1::2], "a man eats food", "the blue sun"]) + "\n")
    build = ["index", "build", "--corpus", str(corpus), "-o", str(tmp_path / "idx"), "--kind", "hnsw"]
    assert main([*build, *model_args(tiny_model_dir)]) == 0
    argv = ["mine-negatives", str(pairs_file), "--num-negatives", "2", *model_args(tiny_model_dir)]
    assert main([*argv, "--index", str(tmp_path / "idx"), "-o", str(tmp_path / "indexed.tsv")]) == 0
    assert main([*argv, "--corpus", str(corpus), "-o", str(tmp_path / "exact.tsv")]) == 0
    assert (tmp_path / "indexed.tsv").read_text() == (tmp_path / "exact.tsv").read_text()
    capsys.readouterr()
    assert (
        main(
            [*argv, "--index", str(tmp_path / "idx"), "--corpus", str(corpus), "-o", str(tmp_path / "x.tsv")]
        )
        == 1
    )
    assert "give --index, or --corpus" in capsys.readouterr().err
