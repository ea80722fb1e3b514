"""`sbert index build --kind sparse|seismic`, `sbert search` over a sparse index, and hybrid search."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from sbert.cli import main

pytest.importorskip("faiss")
pytest.importorskip("sbert.sparse.model", reason="needs the SparseEncoder (branch sp-core)")

SENTENCES = [
    "a man plays guitar",
    "the dog runs in the park",
    "a cat eats food",
    "the rocket is in space",
    "a woman plays the piano",
    "the cat sleeps",
]
QUERIES = ["a man plays music", "a cat"]


def build_tiny_splade(tiny_model_dir: Path, path: Path, seed: int) -> Path:
    """A plain ``BertForMaskedLM`` folder on the tiny BERT's tokenizer: loads as MLM + SpladePooling(max)."""
    from transformers import BertConfig, BertForMaskedLM

    path.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (tiny_model_dir / name).is_file():
            shutil.copy(tiny_model_dir / name, path / name)
    config = BertConfig.from_pretrained(tiny_model_dir)
    torch.manual_seed(seed)
    BertForMaskedLM(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def splade_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_splade(tiny_model_dir, tmp_path_factory.mktemp("splade") / "a", seed=1)


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def indexes(
    splade_dir: Path, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """A dense (flat) and a sparse index of SENTENCES, built once for the tests that only read them."""
    folder = tmp_path_factory.mktemp("indexes")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    build_index(corpus, folder / "dense", "flat", tiny_model_dir)
    build_index(corpus, folder / "sparse", "sparse", splade_dir)
    return folder / "dense", folder / "sparse"


def build_index(corpus: Path, output: Path, kind: str, model: Path) -> None:
    """``sbert index build`` of ``corpus`` into ``output``, of that kind, by that model."""
    assert (
        main(["index", "build", "--corpus", str(corpus), "-o", str(output), "--kind", kind, "-m", str(model)])
        == 0
    )


def search_json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    capsys.readouterr()
    assert main(["search", *QUERIES, "--json", "-k", "3", *args]) == 0
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines()]  # stdout holds only the JSON lines


@pytest.mark.parametrize("kind", ["sparse", "seismic"])
def test_sparse_build_and_search_equal_the_library(
    kind: str, splade_dir: Path, corpus_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sbert.index.sparse_index import SparseIndex
    from sbert.sparse.model import SparseEncoder

    output = tmp_path / "sparse"
    build_index(corpus_file, output, kind, splade_dir)
    assert f"{'exact' if kind == 'sparse' else 'seismic'} sparse" in capsys.readouterr().err
    records = search_json(capsys, "--index", str(output))  # the model comes from the manifest
    model = SparseEncoder.from_pretrained(str(splade_dir), device="cpu")
    index = SparseIndex.load(output, model=model)
    expected = index.search(model.encode_query(QUERIES), top_k=3)
    assert [[(h["id"], h["text"]) for h in r["hits"]] for r in records] == [
        [(hit.corpus_id, SENTENCES[hit.corpus_id]) for hit in hits] for hits in expected
    ]
    assert [h["score"] for r in records for h in r["hits"]] == pytest.approx(
        [hit.score for hits in expected for hit in hits], rel=1e-5
    )


def test_hybrid_search_fuses_dense_and_sparse(
    splade_dir: Path,
    tiny_model_dir: Path,
    indexes: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sbert import SentenceEncoder
    from sbert.index import VectorIndex
    from sbert.index.hybrid import fuse
    from sbert.index.sparse_index import SparseIndex
    from sbert.sparse.model import SparseEncoder

    dense_dir, sparse_dir = indexes
    dense_model = SentenceEncoder.from_pretrained(tiny_model_dir)
    sparse_model = SparseEncoder.from_pretrained(str(splade_dir), device="cpu")
    dense = VectorIndex.load(dense_dir).search(dense_model.encode_query(QUERIES), top_k=6)
    sparse = SparseIndex.load(sparse_dir).search(sparse_model.encode_query(QUERIES), top_k=6)
    for fusion, extra in (("rrf", []), ("weighted", ["--weights", "0.3", "0.7"])):
        records = search_json(
            capsys, "--index", str(dense_dir), "--sparse-index", str(sparse_dir), "--fusion", fusion, *extra
        )
        weights = (0.3, 0.7) if fusion == "weighted" else (0.5, 0.5)
        expected = fuse(dense, sparse, fusion, top_k=3, weights=weights)
        assert [[h["id"] for h in r["hits"]] for r in records] == [
            [h.corpus_id for h in hits] for hits in expected
        ]
        assert all(h["text"] == SENTENCES[h["id"]] for r in records for h in r["hits"])


def test_wrong_combinations_are_refused(
    splade_dir: Path,
    tiny_model_dir: Path,
    corpus_file: Path,
    tmp_path: Path,
    indexes: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    dense_dir, sparse_dir = indexes
    other = build_tiny_splade(tiny_model_dir, tmp_path / "other", seed=2)
    capsys.readouterr()
    cases = [
        (["--index", str(sparse_dir), "-m", str(other)], "the weights differ"),
        (["--index", str(dense_dir), "--sparse-index", str(dense_dir)], "not a sparse index"),
        (["--index", str(sparse_dir), "--sparse-index", str(sparse_dir)], "needs the dense one"),
        (["--corpus", str(corpus_file), "--sparse-index", str(sparse_dir)], "name both"),
        (["--index", str(sparse_dir), "--rescore-with", str(tiny_model_dir)], "sparse index"),
        (["--index", str(sparse_dir), "--query-cut", "5"], "Seismic's settings"),
    ]
    for args, message in cases:
        assert main(["search", "q", *args]) == 1
        assert message in capsys.readouterr().err
    assert (
        main(
            [
                "index",
                "build",
                "--corpus",
                str(corpus_file),
                "-o",
                str(tmp_path / "s2"),
                "--kind",
                "sparse",
                "-m",
                str(splade_dir),
                "--dimensions",
                "8",
            ]
        )
        == 1
    )
    assert "--dimensions" in capsys.readouterr().err
    (tmp_path / "short.txt").write_text("\n".join(SENTENCES[:4]) + "\n")
    build_index(tmp_path / "short.txt", tmp_path / "s3", "sparse", splade_dir)
    capsys.readouterr()
    assert main(["search", "q", "--index", str(dense_dir), "--sparse-index", str(tmp_path / "s3")]) == 1
    assert "same corpus" in capsys.readouterr().err
