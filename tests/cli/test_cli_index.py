"""`sbert index build` from a store and with kind=auto, and `sbert search` against the index's model."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sbert.cli import main

pytest.importorskip("faiss")

SENTENCES = ["a man plays guitar", "the dog runs in the park", "a cat eats food", "the rocket is in space"]


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return path


def build(corpus_file: Path, output: Path, model: str, *extra: str) -> int:
    return main(["index", "build", "--corpus", str(corpus_file), "-o", str(output), "-m", model, *extra])


def test_other_pooling_is_refused(tiny_model_dir: Path, corpus_file: Path, tmp_path: Path, capsys) -> None:
    assert build(corpus_file, tmp_path / "idx", str(tiny_model_dir)) == 0
    capsys.readouterr()
    assert main(["search", "--index", str(tmp_path / "idx"), SENTENCES[0], "--pooling", "cls"]) == 1
    assert "pooling 'mean' vs 'cls'" in capsys.readouterr().err
    from sbert import SentenceEncoder
    from sbert.embeddings.identity import ModelMismatchError
    from sbert.index import VectorIndex

    with pytest.raises(ModelMismatchError, match="pooling 'mean' vs 'max'"):
        VectorIndex.load(
            tmp_path / "idx", model=SentenceEncoder.from_pretrained(tiny_model_dir, pooling="max")
        )


def test_relative_model_path_is_stored_resolved(
    tiny_model_dir: Path, corpus_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    (tmp_path / "work" / "models").mkdir(parents=True)
    shutil.copytree(tiny_model_dir, tmp_path / "work" / "models" / "tiny")
    monkeypatch.chdir(tmp_path / "work")
    assert build(corpus_file, tmp_path / "idx", "models/tiny", "--kind", "flat") == 0
    identity = json.loads((tmp_path / "idx" / "manifest.json").read_text())["identity"]
    assert identity["source"] == str((tmp_path / "work" / "models" / "tiny").resolve())
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # "models/tiny" means nothing here
    capsys.readouterr()
    assert main(["search", "--index", str(tmp_path / "idx"), SENTENCES[1], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["text"] == SENTENCES[1]
    shutil.rmtree(tmp_path / "work" / "models" / "tiny")
    assert main(["search", "--index", str(tmp_path / "idx"), SENTENCES[1]]) == 1
    assert "no such directory" in capsys.readouterr().err


def test_build_from_store_looks_texts_up_in_it(
    tiny_encoder, tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    from sbert.embeddings.identity import model_identity
    from sbert.store import StoreWriter

    vectors = tiny_encoder.encode(SENTENCES * 50, normalize=True)  # (200, dim)
    settings = {"dim": vectors.shape[1], "dtype": "float32", "normalized": True, "id_column": "id"}
    writer = StoreWriter.open(
        str(tmp_path / "store"), {**settings, "model": model_identity(tiny_encoder).to_dict()}
    )
    texts = [f"{s} #{i}" for i, s in enumerate(SENTENCES * 50)]
    for start in (0, 120):
        with writer.shard() as shard:
            part = slice(start, start + 120)
            shard.write(np.arange(len(texts))[part] + 1000, texts[part], vectors[part])
    writer.finish()
    args = ["index", "build", "--store", str(tmp_path / "store"), "-o", str(tmp_path / "idx")]
    assert main([*args, "--kind", "binary", "--rescore", "float32"]) == 0
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["texts"]["store"] == str((tmp_path / "store").resolve())
    assert not (tmp_path / "idx" / "corpus.jsonl").exists()
    capsys.readouterr()
    query = texts[2].split(" #")[0]
    assert main(["search", "--index", str(tmp_path / "idx"), query, "-k", "1", "--json"]) == 0
    (hit,) = json.loads(capsys.readouterr().out)["hits"]
    assert hit["text"].startswith(query) and hit["text"] == texts[hit["id"] - 1000]
    assert hit["score"] == pytest.approx(1.0, abs=1e-5)
    # The store keeps whole vectors; an index of their first 16 dimensions cuts them shard by shard.
    prefix = ["index", "build", "--store", str(tmp_path / "store"), "-o", str(tmp_path / "idx16")]
    assert main([*prefix, "--kind", "flat", "--dimensions", "16"]) == 0
    manifest = json.loads((tmp_path / "idx16" / "manifest.json").read_text())
    assert (manifest["dimension"], manifest["truncated_from"]) == (16, vectors.shape[1])
    capsys.readouterr()
    assert main(["search", "--index", str(tmp_path / "idx16"), query, "-k", "1", "--json"]) == 0
    (hit,) = json.loads(capsys.readouterr().out)["hits"]
    assert hit["text"].startswith(query) and hit["score"] == pytest.approx(1.0, abs=1e-5)


def test_auto_says_what_it_chose(tiny_model_dir: Path, corpus_file: Path, tmp_path: Path, capsys) -> None:
    assert build(corpus_file, tmp_path / "idx", str(tiny_model_dir), "--max-memory", "8G") == 0
    assert "kind auto: chose flat for 4 vectors" in capsys.readouterr().err
    assert build(corpus_file, tmp_path / "idx", str(tiny_model_dir), "--max-memory", "1M") == 1
    assert "no index kind serves 4" in capsys.readouterr().err


def test_a_prefix_index_is_searched_with_cut_queries(
    tiny_model_dir: Path, corpus_file: Path, tmp_path: Path, capsys
) -> None:
    assert (
        build(corpus_file, tmp_path / "idx", str(tiny_model_dir), "--kind", "flat", "--dimensions", "8") == 0
    )
    assert "flat, 8-d of 32" in capsys.readouterr().err
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert (manifest["dimension"], manifest["truncated_from"]) == (8, 32)
    for sentence in SENTENCES:
        assert main(["search", "--index", str(tmp_path / "idx"), sentence, "--json", "-k", "1"]) == 0
        assert json.loads(capsys.readouterr().out)["hits"][0]["text"] == sentence
    assert build(corpus_file, tmp_path / "bad", str(tiny_model_dir), "--dimensions", "64") == 1
    assert "between 1 and the vectors' 32, got 64" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["binary", "binary_ivf"])
def test_a_binary_index_of_a_prefix_not_a_multiple_of_8(
    tiny_model_dir: Path, corpus_file: Path, tmp_path: Path, capsys, kind: str
) -> None:
    # 20 of the tiny model's 32 dimensions: 3 bytes a code, the last one half padding.
    assert (
        build(corpus_file, tmp_path / "idx", str(tiny_model_dir), "--kind", kind, "--dimensions", "20") == 0
    )
    capsys.readouterr()
    assert main(["search", "--index", str(tmp_path / "idx"), SENTENCES[2], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["text"] == SENTENCES[2]
