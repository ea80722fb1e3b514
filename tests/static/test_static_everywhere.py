"""A static model is a model: distil with the CLI, then store, index, search, mine, cluster, evaluate, serve."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.cli import main
from sbert.static import StaticEncoder

SENTENCES = [
    "a man plays guitar",
    "a man plays guitar",
    "the dog runs in the park",
    "a cat eats food",
    "good",
]


@pytest.fixture(scope="module")
def distilled(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("distilled") / "static"
    code = main(
        ["distill", "static", "--teacher", str(tiny_model_dir), "-o", str(output), "--dimensions", "8"]
    )
    assert code == 0
    return output


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return path


def test_store_index_search_mine_cluster(distilled: Path, corpus_file: Path, tmp_path: Path, capsys) -> None:
    pytest.importorskip("faiss")
    pytest.importorskip("pyarrow")
    model = SentenceEncoder.from_pretrained(distilled)
    assert isinstance(model, StaticEncoder) and model.dim == 8
    store = tmp_path / "store"
    assert main(["encode", str(corpus_file), "--output", f"{store}/", "-m", str(distilled)]) == 0
    assert main(["index", "build", "--store", str(store), "-o", str(tmp_path / "idx")]) == 0
    capsys.readouterr()
    # No --model: the index's manifest names the static model, which from_pretrained loads again.
    assert main(["search", "--index", str(tmp_path / "idx"), "a man plays guitar", "-k", "2", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {hit["id"] for hit in record["hits"]} == {0, 1}
    assert main(["mine", str(corpus_file), "-m", str(distilled), "--json", "--max-pairs", "1"]) == 0
    (pair,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {pair["i"], pair["j"]} == {0, 1} and pair["score"] == pytest.approx(1.0, abs=1e-5)
    assert main(["cluster", str(corpus_file), "-m", str(distilled), "--n-clusters", "2"]) == 0


def test_evaluate_sts(distilled: Path, data_dir: Path, capsys) -> None:
    code = main(["evaluate", "sts", "-m", str(distilled), "--sets", "STSb", "--data-dir", str(data_dir)])
    assert code == 0 and "STSb" in capsys.readouterr().out


def test_serve_gives_encode_vectors(distilled: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "server"))
    from server_process import ServerProcess

    httpx = pytest.importorskip("httpx")
    process = ServerProcess(["--model", str(distilled)]).wait_ready()
    try:
        response = httpx.post(f"{process.url}/v1/embeddings", json={"input": SENTENCES}, timeout=30)
        got = np.array([item["embedding"] for item in response.json()["data"]], dtype=np.float32)
        model = SentenceEncoder.from_pretrained(distilled)
        np.testing.assert_allclose(got, model.encode(SENTENCES), atol=1e-6)
        assert response.json()["usage"]["prompt_tokens"] == sum(model.token_counts(SENTENCES))
    finally:
        process.terminate()
        process.wait_exit()


def test_info_describes_a_static_model_and_its_prompts(
    static_model: StaticEncoder, tmp_path: Path, capsys
) -> None:
    from sbert.model.prompts import Prompts

    static_model.prompts = Prompts({"query": "query: "}, default_name="query")
    static_model.save(tmp_path / "static")
    assert main(["info", str(tmp_path / "static")]) == 0
    out = capsys.readouterr().out
    assert "static, " in out and "StaticEmbedding → Pooling(mean)" in out
    assert "prompts:        query: 'query: ' (default)" in out
    assert "openvino/int8     torch/float32" in out
    loaded = SentenceEncoder.from_pretrained(tmp_path / "static")
    np.testing.assert_allclose(
        loaded.encode(["rain"]), static_model.encode(["query: rain"], prompt=""), atol=1e-6
    )
