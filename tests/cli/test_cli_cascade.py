"""`sbert search --index IDX --rescore-with MODEL`: a static index's candidates re-ranked by a transformer."""

import json
from pathlib import Path

import numpy as np
import pytest

from sbert.cli import main

pytest.importorskip("faiss")

SENTENCES = [
    "a man plays guitar",
    "the dog runs in the park",
    "a cat eats food",
    "the rocket is in space",
    "a woman plays piano",
    "the child is happy",
    "red car on the street",
    "a small blue bug",
]
QUERY = "a man plays music"


@pytest.fixture()
def static_index(tiny_static_dir: Path, tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    output = tmp_path / "idx"
    args = ["index", "build", "--corpus", str(corpus), "-o", str(output), "-m", str(tiny_static_dir)]
    assert main([*args, "--kind", "flat"]) == 0
    return output


def search(*args: str) -> list[str]:
    return ["search", *args, "--precision", "float32", "--backend", "torch", "--json"]


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_rescore_with_prints_the_rescorers_order_and_scores(
    static_index: Path, tiny_static_dir: Path, tiny_model_dir: Path, tiny_encoder, capsys
) -> None:
    from sbert import SentenceEncoder

    capsys.readouterr()
    args = ["--index", str(static_index), QUERY, "-k", "3", "--rescore-candidates", "5"]
    assert main(search(*args, "--rescore-with", str(tiny_model_dir))) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    # The oracle: the static model's 5 nearest, ordered by the transformer's cosine.
    static = SentenceEncoder.from_pretrained(tiny_static_dir)
    first = (unit(static.encode_query([QUERY])) @ unit(static.encode_document(SENTENCES)).T)[0]
    second = (unit(tiny_encoder.encode_query([QUERY])) @ unit(tiny_encoder.encode_document(SENTENCES)).T)[0]
    allowed = np.argsort(-first, kind="stable")[:5]
    best = sorted(allowed.tolist(), key=lambda i: -second[i])[:3]
    assert [hit["id"] for hit in hits] == best
    assert [hit["text"] for hit in hits] == [SENTENCES[i] for i in best]
    np.testing.assert_allclose([hit["score"] for hit in hits], second[best], atol=1e-5)


def test_k_above_the_candidates_widens_them(static_index: Path, tiny_model_dir: Path, capsys) -> None:
    capsys.readouterr()
    args = ["--index", str(static_index), QUERY, "-k", "6", "--rescore-candidates", "2"]
    assert main(search(*args, "--rescore-with", str(tiny_model_dir))) == 0
    assert len(json.loads(capsys.readouterr().out)["hits"]) == 6


def test_an_index_without_texts_is_refused(
    tiny_static_dir: Path, tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    store = tmp_path / "store"
    model = ["-m", str(tiny_static_dir)]
    assert main(["encode", str(corpus), "-o", f"{store}/", *model, "--no-texts", "--no-progress"]) == 0
    assert main(["index", "build", "--store", str(store), "-o", str(tmp_path / "idx"), "--kind", "flat"]) == 0
    capsys.readouterr()
    args = ["--index", str(tmp_path / "idx"), QUERY, "--rescore-with", str(tiny_model_dir)]
    assert main(search(*args)) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'idx'}: the index reads its texts from the store" in err
    assert "written without texts" in err and "--rescore-with cannot be used with it" in err
    # Searching it without a rescorer still works: the cascade alone needs texts.
    assert main(search("--index", str(tmp_path / "idx"), QUERY)) == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--rescore-candidates", "5"], "--rescore-candidates is for --rescore-with MODEL"),
    ],
)
def test_bad_cascade_flags_are_named(static_index: Path, capsys, extra: list[str], message: str) -> None:
    capsys.readouterr()
    assert main(search("--index", str(static_index), QUERY, *extra)) == 1
    assert message in capsys.readouterr().err


def test_rescore_with_needs_an_index(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a\n", encoding="utf-8")
    assert main(search("--corpus", str(corpus), QUERY, "--rescore-with", "M")) == 1
    assert "--rescore-with re-ranks an index's candidates: use it with --index" in capsys.readouterr().err


def test_default_candidates_match_the_library() -> None:
    from sbert.cli.search import DEFAULT_CANDIDATES as CLI_DEFAULT
    from sbert.index.cascade import DEFAULT_CANDIDATES

    assert CLI_DEFAULT == DEFAULT_CANDIDATES
