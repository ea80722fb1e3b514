"""The application subcommands: index build, search, mine, cluster (tiny random BERT)."""

import json
from pathlib import Path

import pytest

from sbert.cli import main

pytest.importorskip("faiss")

SENTENCES = [
    "a man plays guitar",
    "a man plays guitar",
    "the dog runs in the park",
    "a cat eats food",
    "the rocket is in space",
    "a woman plays piano",
]


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return path


def test_index_build_then_search(tiny_model_dir: Path, corpus_file: Path, tmp_path: Path, capsys) -> None:
    index_dir = tmp_path / "idx"
    code = main(
        ["index", "build", "--corpus", str(corpus_file), "-o", str(index_dir), "-m", str(tiny_model_dir)]
    )
    assert code == 0 and (index_dir / "manifest.json").is_file()
    assert json.loads((index_dir / "manifest.json").read_text())["kind"] == "flat"
    capsys.readouterr()
    # No --model: the index's manifest names it.
    assert main(["search", "--index", str(index_dir), "a man plays guitar", "-k", "2", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {hit["id"] for hit in record["hits"]} == {0, 1} and record["hits"][0]["text"] == SENTENCES[0]


def test_search_refuses_index_of_another_model(
    tiny_model_dir: Path, corpus_file: Path, tmp_path: Path, capsys
) -> None:
    other = tmp_path / "other-model"
    from tests.conftest import build_tiny_bert

    build_tiny_bert(other, seed=1)
    main(
        [
            "index",
            "build",
            "--corpus",
            str(corpus_file),
            "-o",
            str(tmp_path / "idx"),
            "-m",
            str(tiny_model_dir),
        ]
    )
    assert main(["search", "--index", str(tmp_path / "idx"), "q", "-m", str(other)]) == 1
    err = capsys.readouterr().err
    assert str(tiny_model_dir) in err and str(other) in err


def test_search_corpus_exact(tiny_model_dir: Path, corpus_file: Path, capsys) -> None:
    assert (
        main(["search", "--corpus", str(corpus_file), "the dog runs in the park", "-m", str(tiny_model_dir)])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "query: the dog runs in the park" and "[2] the dog runs in the park" in lines[1]
    assert len(lines) == 6


def test_search_bad_top_k(tiny_model_dir: Path, corpus_file: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:  # refused as argparse parses it: a usage error
        main(["search", "--corpus", str(corpus_file), "q", "-k", "0", "-m", str(tiny_model_dir)])
    assert exit_info.value.code == 2
    assert "--top-k/-k: expected a whole number of at least 1, got '0'" in capsys.readouterr().err


def test_mine(tiny_model_dir: Path, corpus_file: Path, capsys) -> None:
    assert main(["mine", str(corpus_file), "--max-pairs", "3", "--json", "-m", str(tiny_model_dir)]) == 0
    pairs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(pairs) == 3 and (pairs[0]["i"], pairs[0]["j"]) == (0, 1)
    assert pairs[0]["score"] >= pairs[1]["score"] >= pairs[2]["score"]


@pytest.mark.parametrize(
    ("method", "extra"),
    [
        ("agglomerative", ["--n-clusters", "3"]),
        ("kmeans", ["--n-clusters", "2"]),
        ("community", ["--threshold", "0.99", "--min-size", "2"]),
    ],
)
def test_cluster(tiny_model_dir: Path, corpus_file: Path, capsys, method: str, extra: list[str]) -> None:
    assert (
        main(["cluster", str(corpus_file), "--method", method, "--json", "-m", str(tiny_model_dir), *extra])
        == 0
    )
    clusters = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    members = [m for c in clusters for m in c["members"]]
    assert len(members) == len(set(members))
    assert any({0, 1} <= set(c["members"]) for c in clusters)  # the duplicate sentences stay together
    if method != "community":
        assert sorted(members) == list(range(len(SENTENCES)))


def test_cluster_threshold_out_of_range(tiny_model_dir: Path, corpus_file: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:  # refused as argparse parses it: a usage error
        main(
            [
                "cluster",
                str(corpus_file),
                "--method",
                "community",
                "--threshold",
                "2",
                "-m",
                str(tiny_model_dir),
            ]
        )
    assert exit_info.value.code == 2 and "a finite number from -1 to 1, got '2'" in capsys.readouterr().err


def test_demo_shows_applications(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("SBERT_DATA", raising=False)
    assert main(["demo", "--model", str(tiny_model_dir)]) == 0
    out = capsys.readouterr().out
    assert "Paraphrase mining" in out and "Agglomerative clustering" in out and "Semantic search" in out
