"""The route table on real servers: TEI's root routes, OpenAI's routes at the root and by id, rerank's
Cohere/infinity bodies, a static model on every route, and several models by their served names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from server_process import ServerProcess
from tests.conftest import build_tiny_bert

from sbert import SentenceEncoder
from sbert.index import VectorIndex

TEXTS = ["a man plays the guitar", "the dog runs in the park", "rain"]


def post(server: ServerProcess, path: str, body: object) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, timeout=30)


def test_tei_root_routes_and_openai_routes_at_the_root(server: ServerProcess) -> None:
    embedded = post(server, "/embed", {"inputs": TEXTS}).json()
    for path in ("/", "/invocations"):  # TEI serves an embedding model's /embed there
        np.testing.assert_allclose(post(server, path, {"inputs": TEXTS}).json(), embedded, atol=1e-7)
    similarity = {"inputs": {"source_sentence": "rain", "sentences": TEXTS}}
    assert post(server, "/", similarity).json() == post(server, "/similarity", similarity).json()
    for path in ("/", "/ping", "/health"):
        assert httpx.get(f"{server.url}{path}").json()["status"] == "ok"
    traced = httpx.request("TRACE", f"{server.url}/", timeout=30)
    assert traced.status_code == 405 and {"GET", "POST"} <= set(traced.headers["allow"].split(", "))
    openai = np.array([d["embedding"] for d in post(server, "/embeddings", {"input": TEXTS}).json()["data"]])
    unit = openai / np.linalg.norm(openai, axis=1, keepdims=True)  # /embed normalizes, the model does not
    np.testing.assert_allclose(unit, embedded, atol=1e-6)
    assert [m["id"] for m in httpx.get(f"{server.url}/models").json()["data"]] == ["tiny-bert"]
    assert httpx.get(f"{server.url}/v1/models/tiny-bert").json()["id"] == "tiny-bert"
    missing = httpx.get(f"{server.url}/v1/models/org/other")
    assert (
        missing.status_code == 404 and "'org/other' is not served here" in missing.json()["error"]["message"]
    )


def test_rerank_takes_cohere_and_infinity_bodies(server: ServerProcess) -> None:
    plain = post(server, "/rerank", {"query": "rain", "documents": TEXTS}).json()
    objects = [{"text": text} for text in TEXTS]
    as_objects = post(server, "/rerank", {"query": "rain", "documents": objects, "top_n": 3.0}).json()
    assert as_objects["results"] == plain["results"]
    assert plain["results"][0]["document"] == {"text": TEXTS[plain["results"][0]["index"]]}
    bare = post(server, "/rerank", {"query": "rain", "documents": TEXTS, "return_documents": False}).json()
    assert all("document" not in result for result in bare["results"])
    raw = post(server, "/rerank", {"query": "rain", "documents": TEXTS, "raw_scores": True})
    assert raw.status_code == 422 and raw.json()["error"]["param"] == "raw_scores"
    half = post(server, "/rerank", {"query": "rain", "documents": TEXTS, "top_n": 1.5})
    assert half.status_code == 422 and half.json()["error"]["param"] == "top_n"


@pytest.fixture(scope="module")
def static_server(tiny_static_dir: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(["--model", str(tiny_static_dir)]).wait_ready()
    yield process
    process.terminate()
    process.wait_exit()


def test_a_static_model_answers_every_route(static_server: ServerProcess, tiny_static_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(tiny_static_dir)
    tokens = post(static_server, "/tokenize", {"inputs": TEXTS}).json()
    ids = [[token["id"] for token in each] for each in tokens]
    expected = model.token_ids(TEXTS).ids  # a static model's ids are one flat array, cut per sentence
    assert ids == [[int(i) for i in expected[k]] for k in range(len(expected))]
    assert not any(t["special"] for each in tokens for t in each)
    assert post(static_server, "/decode", {"ids": ids}).json() == TEXTS
    rows = post(static_server, "/embed_all", {"inputs": TEXTS}).json()
    table = model.input_module.embedding.weight.detach().numpy()
    for row, each in zip(rows, ids):
        np.testing.assert_allclose(row, table[each], atol=1e-6)
    expected = model.encode(TEXTS)
    by_ids = post(static_server, "/v1/embeddings", {"input": ids}).json()
    np.testing.assert_allclose([d["embedding"] for d in by_ids["data"]], expected, atol=1e-6)
    for path, body in [
        ("/embed", {"inputs": TEXTS}),
        ("/similarity", {"source_sentence": "a", "sentences": TEXTS}),
    ]:
        assert post(static_server, path, body).status_code == 200


@pytest.fixture(scope="module")
def named(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Two models, the first with an alias and the index."""
    other = build_tiny_bert(tmp_path_factory.mktemp("other-bert"), seed=1)
    encoder = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    index = tmp_path_factory.mktemp("named-index") / "index"
    VectorIndex.build(encoder.encode(TEXTS), texts=TEXTS, kind="flat", model_name=encoder.name).save(index)
    args = ["--model", f"tiny={tiny_model_dir}", "--model", f"other={other}", "--index", str(index)]
    args += [
        "--served-model-name",
        "tiny=text-embedding-3-small",
        "--precision",
        "float32",
        "--backend",
        "torch",
    ]
    process = ServerProcess(args).wait_ready()
    yield process
    process.kill()


def test_several_models_go_by_their_served_names_only(named: ServerProcess, tiny_model_dir: Path) -> None:
    listed = [m["id"] for m in httpx.get(f"{named.url}/v1/models").json()["data"]]
    assert listed == ["tiny", "text-embedding-3-small", "other"]
    assert httpx.get(f"{named.url}/health").json()["models"] == listed
    by_alias = post(named, "/v1/embeddings", {"input": "rain", "model": "text-embedding-3-small"}).json()
    assert by_alias["model"] == "tiny"
    by_path = post(named, "/v1/embeddings", {"input": "rain", "model": str(tiny_model_dir)})
    message = by_path.json()["error"]["message"]
    assert by_path.status_code == 404
    assert message.endswith("this server runs 'tiny' (also 'text-embedding-3-small'), 'other'")
    assert post(named, "/search", {"query": "rain", "model": "text-embedding-3-small"}).status_code == 200
    elsewhere = post(named, "/search", {"query": "rain", "model": "other"})
    assert elsewhere.status_code == 404
    assert "'other' has no index" in elsewhere.json()["error"]["message"]
    assert "send model 'tiny'" in elsewhere.json()["error"]["message"]
    assert post(named, "/embed", {"inputs": "rain"}).headers["x-sbert-model"] == "tiny"
    named.terminate()
    named.wait_exit()
    assert "sbert serve: tiny = text-embedding-3-small: " in named.output()
