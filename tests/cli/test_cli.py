import io
import json
from pathlib import Path

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.cli import main


def test_encode_txt_to_npy_matches_api(tiny_model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("a man plays guitar\nthe dog runs\n", encoding="utf-8")
    assert (
        main(
            [
                "encode",
                str(tmp_path / "in.txt"),
                "-o",
                str(tmp_path / "out.npy"),
                "--model",
                str(tiny_model_dir),
                "--max-tokens",
                "8",
            ]
        )
        == 0
    )
    expected = SentenceEncoder.from_pretrained(tiny_model_dir).encode(["a man plays guitar", "the dog runs"])
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, atol=1e-6)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_encode_dimensions_cuts_and_renormalises(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    from sbert.embeddings.truncation import truncate_embeddings

    (tmp_path / "in.txt").write_text("a man plays guitar\nthe dog runs\n", encoding="utf-8")
    argv = ["encode", str(tmp_path / "in.txt"), "--model", str(tiny_model_dir), "--dimensions"]
    assert main([*argv, "8", "-o", str(tmp_path / "out.npy")]) == 0
    full = SentenceEncoder.from_pretrained(tiny_model_dir).encode(["a man plays guitar", "the dog runs"])
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), truncate_embeddings(full, 8), atol=1e-6)
    assert "dimension 8" in capsys.readouterr().err
    assert main([*argv, "64", "-o", str(tmp_path / "big.npy")]) == 1
    assert "between 1 and model" in capsys.readouterr().err and not (tmp_path / "big.npy").exists()
    assert main([*argv, "8", "-o", str(tmp_path / "store") + "/"]) == 1
    assert "a store keeps whole vectors" in capsys.readouterr().err


def test_encode_csv_to_jsonl(tiny_model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text("id,sentence\n1,hello\n2,world\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    code = main(
        [
            "encode",
            str(tmp_path / "in.csv"),
            "--column",
            "sentence",
            "-o",
            str(out),
            "--model",
            str(tiny_model_dir),
            "--normalize",
        ]
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == 0 and [r["text"] for r in records] == ["hello", "world"]
    assert abs(np.linalg.norm(records[0]["embedding"]) - 1) < 1e-5


def test_encode_stdin_to_stdout(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("one\ntwo\nthree\n"))
    assert main(["encode", "-", "--model", str(tiny_model_dir)]) == 0
    assert [json.loads(line)["index"] for line in capsys.readouterr().out.splitlines()] == [0, 1, 2]


def test_encode_bad_input_is_reported(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "bad.jsonl").write_text('{"x": 1}\n', encoding="utf-8")
    assert main(["encode", str(tmp_path / "bad.jsonl"), "--model", str(tiny_model_dir)]) == 1
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert main(["encode", str(tmp_path / "missing.txt")]) == 1


def test_similarity_prints_matrix(tiny_model_dir: Path, capsys) -> None:
    assert main(["similarity", "a cat", "a dog", "rain", "--model", str(tiny_model_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and "1.000" in lines[1]


def test_info(tiny_model_dir: Path, capsys) -> None:
    assert main(["info", str(tiny_model_dir), "--pooling", "cls"]) == 0
    out = capsys.readouterr().out
    assert "Pooling(cls)" in out and "dimension:      32" in out


def test_demo_without_data(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("SBERT_DATA", raising=False)
    assert main(["demo", "--model", str(tiny_model_dir)]) == 0
    out = capsys.readouterr().out
    assert "Semantic search over 32 corpus sentences" in out and "STSb test: skipped" in out


def test_no_command_prints_help(capsys) -> None:
    assert main([]) == 2


def test_info_shows_precision_and_backend(tiny_model_dir: Path, capsys) -> None:
    assert main(["info", str(tiny_model_dir), "--precision", "float32", "--backend", "torch"]) == 0
    out = capsys.readouterr().out
    assert "precision:      float32 (asked: float32)" in out
    assert "backend:        torch (asked: torch)" in out
    with pytest.raises(SystemExit):
        main(["info", str(tiny_model_dir), "--precision", "int3"])


def test_int8_calibration_file_reaches_the_model(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("nncf")
    calibration = ["a man plays the guitar", "the dog runs in the park", "rain and sun"]
    (tmp_path / "calibration.txt").write_text("\n".join(calibration), encoding="utf-8")
    (tmp_path / "input.txt").write_text("a cat eats food\nthe child is happy\n", encoding="utf-8")
    arguments = [
        "encode",
        str(tmp_path / "input.txt"),
        "-o",
        str(tmp_path / "out.npy"),
        "-m",
        str(tiny_model_dir),
    ]
    assert main([*arguments, "--precision", "int8", "--calibration", str(tmp_path / "calibration.txt")]) == 0
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="int8", calibration_sentences=calibration
    )
    expected = model.encode(["a cat eats food", "the child is happy"])
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), expected)


def test_encode_index_and_search_use_the_prompts(prompted_dir: Path, tmp_path: Path, capsys) -> None:
    model = SentenceEncoder.from_pretrained(prompted_dir, device="cpu", backend="torch")
    texts = ["a man plays guitar", "the dog runs", "rain in the park"]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    common = ["--model", str(prompted_dir), "--backend", "torch"]
    assert (
        main(
            [
                "encode",
                str(tmp_path / "in.txt"),
                "-o",
                str(tmp_path / "d.npy"),
                "--prompt-name",
                "document",
                *common,
            ]
        )
        == 0
    )
    np.testing.assert_allclose(np.load(tmp_path / "d.npy"), model.encode_document(texts), atol=1e-6)
    assert (
        main(["encode", str(tmp_path / "in.txt"), "-o", str(tmp_path / "q.npy"), "--prompt", "Q: ", *common])
        == 0
    )
    np.testing.assert_allclose(np.load(tmp_path / "q.npy"), model.encode(texts, prompt="Q: "), atol=1e-6)
    assert main(["similarity", "a", "b", "--prompt-name", "passage", *common]) != 0
    assert (
        "unknown prompt_name 'passage'; this model's prompts: 'document', 'query'" in capsys.readouterr().err
    )

    index = tmp_path / "index"
    assert (
        main(
            [
                "index",
                "build",
                "--corpus",
                str(tmp_path / "in.txt"),
                "-o",
                str(index),
                "--kind",
                "flat",
                *common,
            ]
        )
        == 0
    )
    assert json.loads((index / "manifest.json").read_text())["document_prompt"] == "passage: "
    capsys.readouterr()
    assert main(["search", "the dog runs", "--index", str(index), "--json", "-k", "3", *common]) == 0
    scores = [hit["score"] for hit in json.loads(capsys.readouterr().out)["hits"]]
    documents, query = model.encode_document(texts), model.encode_query("the dog runs")
    expected = documents @ query / np.linalg.norm(documents, axis=1) / np.linalg.norm(query)
    np.testing.assert_allclose(scores, np.sort(expected)[::-1], atol=1e-5)


def test_info_shows_prompts_and_what_each_backend_runs(prompted_dir: Path, capsys) -> None:
    assert main(["info", str(prompted_dir)]) == 0
    out = capsys.readouterr().out
    assert "prompts:        document: 'passage: ', query: 'query: ' (default)" in out
    assert "Pooling(mean, prompt left out)" in out
    assert "openvino/float32  torch/float32" in out or "openvino/float32  refused" in out


def test_show_progress_bar_is_sentence_transformers_spelling_of_the_progress_flags(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = tmp_path / "texts.txt"
    texts.write_text("a man plays guitar\nthe dog runs\n", encoding="utf-8")
    model = ["--model", str(tiny_model_dir), "--device", "cpu", "--precision", "float32"]
    assert main(["encode", str(texts), "-o", str(tmp_path / "v.npy"), *model, "--show-progress-bar"]) == 0
    assert "Encoding" in capsys.readouterr().err  # the bar, shown for two sentences
    assert main(["encode", str(texts), "-o", str(tmp_path / "w.npy"), *model, "--no-progress"]) == 0
    assert "Encoding" not in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["encode", str(texts), *model, "--show-progress-bar", "--no-progress"])
    assert "not allowed with argument" in capsys.readouterr().err
