"""``sbert train file`` end to end on a tiny random BERT; the output directory is a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sbert import SentenceEncoder
from sbert.cli import main

ROWS = [
    ("a man plays guitar", "a man plays music", 4.5),
    ("a dog runs in the park", "the red car", 0.5),
    ("a woman cooks food", "a woman is eating", 3.0),
    ("the sun and rain", "a small blue rocket", 0.0),
] * 4


@pytest.fixture()
def pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.tsv"
    path.write_text("sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{b}\t{s}\n" for a, b, s in ROWS))
    return path


def model_and_steps(model_dir: Path, output: Path, epochs: int) -> list[str]:
    """The base model, the output and a short run of batches of 4."""
    return ["--base", str(model_dir), "--output", str(output), "--epochs", str(epochs), "--batch-size", "4"]


@pytest.mark.parametrize(
    "loss",
    ["cosine-mse", "cosent", "mnrl", "cached-mnrl --mini-batch-size 3", "cosent --matryoshka-dims 32 16 8"],
)
def test_train_file_writes_a_loadable_model_log_and_results(
    loss: str, pairs_file: Path, trainable_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SBERT_DATA", raising=False)
    output = tmp_path / "out"
    argv = ["train", "file", "--train", str(pairs_file), "--loss", *loss.split(), "--dev", str(pairs_file)]
    argv += model_and_steps(trainable_model_dir, output, epochs=2)
    assert main([*argv, "--lr", "1e-3", "--no-progress", "--device", "cpu"]) == 0
    results = json.loads((output / "results.json").read_text())
    assert results["steps"] == 8 and results["best_dev_spearman_cosine"] is not None
    assert SentenceEncoder.from_pretrained(output, device="cpu").encode(["a man"]).shape == (1, 32)
    assert (output / "training_log.jsonl").is_file()


def test_train_file_keeps_the_best_ndcg_on_a_retrieval_dev_set(
    pairs_file: Path, trainable_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sbert.data.beir import RetrievalSet

    monkeypatch.delenv("SBERT_DATA", raising=False)
    texts = sorted({text for a, b, _ in ROWS for text in (a, b)})
    corpus = {f"d{i}": text for i, text in enumerate(texts)}
    RetrievalSet("dev", corpus, {"q0": "a man plays"}, {"q0": {"d1": 1}}).save(tmp_path / "beir", split="dev")
    output = tmp_path / "out"
    argv = [
        "train",
        "file",
        "--train",
        str(pairs_file),
        "--loss",
        "mnrl",
        "--dev-retrieval",
        str(tmp_path / "beir"),
    ]
    argv += model_and_steps(trainable_model_dir, output, epochs=1)
    assert main([*argv, "--no-progress", "--device", "cpu"]) == 0
    results = json.loads((output / "results.json").read_text())
    assert 0.0 <= results["best_dev_ndcg@10"] <= 1.0 and "best_dev_spearman_cosine" not in results


def test_bad_training_file_is_a_clear_error(
    tmp_path: Path, trainable_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("sentence1,sentence2,score\na,b,9\n")
    argv = ["train", "file", "--train", str(bad), "--loss", "cosine-mse", "--base", str(trainable_model_dir)]
    assert main([*argv, "--output", str(tmp_path / "out"), "--device", "cpu"]) == 1
    assert "bad.csv:2: score 9 is outside 0-5" in capsys.readouterr().err


def test_train_cross_stsb_reports_test_spearman(trainable_model_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "data" / "stsb" / "original"
    folder.mkdir(parents=True)
    lines = "".join(f"g\tf\t2012\t{i}\t{s}\t{a}\t{b}\n" for i, (a, b, s) in enumerate(ROWS))
    for split in ("train", "dev", "test"):
        (folder / f"sts-{split}.csv").write_text(lines, encoding="utf-8")
    output = tmp_path / "cross"
    argv = ["train", "cross-stsb", "--base", str(trainable_model_dir), "--output", str(output)]
    argv += ["--data-dir", str(tmp_path / "data"), "--epochs", "1", "--batch-size", "8", "--no-progress"]
    assert main([*argv, "--device", "cpu", "--lr", "1e-3"]) == 0
    results = json.loads((output / "results.json").read_text())
    assert results["recipe"] == "cross-stsb" and results["steps"] == 2
    assert -100 <= results["stsb_test_spearman"] <= 100 and results["best_dev_spearman"] is not None
    assert (output / "sbert_cross_encoder.json").is_file()


def test_no_progress_hides_the_dev_evaluation_bars_too(
    pairs_file: Path, trainable_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = tmp_path / "dev.tsv"  # 1000 distinct sentences: enough for encode()'s default bar
    dev.write_text(
        "sentence1\tsentence2\tscore\n" + "".join(f"a man {i}\tthe dog {i}\t{i % 6}\n" for i in range(500))
    )
    argv = ["train", "file", "--train", str(pairs_file), "--loss", "cosine-mse", "--dev", str(dev)]
    argv += ["--base", str(trainable_model_dir), "--output", str(tmp_path / "out"), "--device", "cpu"]
    assert main([*argv, "--no-progress"]) == 0
    assert "Encoding" not in capsys.readouterr().err
    assert main([*argv, "--output", str(tmp_path / "with-bars")]) == 0
    assert "Encoding" in capsys.readouterr().err  # the same run with bars shows them
