"""The endpoints of a real server process, through httpx and the official openai client."""

from __future__ import annotations

import base64
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from openai import OpenAI
from server_process import ServerProcess

from sbert import SentenceEncoder

SENTENCES = ["a man plays the guitar", "the dog runs in the park", "a child is eating food", "rain"]
LONG = " ".join(["music"] * 100)  # over the tiny model's 64 tokens


def post(server, path: str, body: object, **kwargs) -> httpx.Response:  # type: ignore[no-untyped-def]
    return httpx.post(f"{server.url}{path}", json=body, timeout=30, **kwargs)


def test_openai_client_vectors_equal_encode(server, tiny_encoder: SentenceEncoder) -> None:
    client = OpenAI(base_url=f"{server.url}/v1", api_key="unused")
    response = client.embeddings.create(input=SENTENCES, model="tiny-bert")  # base64 on the wire
    got = np.array([item.embedding for item in response.data], dtype=np.float32)
    np.testing.assert_allclose(got, tiny_encoder.encode(SENTENCES), atol=1e-6)
    assert [item.index for item in response.data] == list(range(len(SENTENCES)))
    expected_tokens = sum(len(ids) for ids in tiny_encoder.token_ids(SENTENCES).ids)
    assert response.usage.prompt_tokens == expected_tokens


def test_float_and_base64_formats_agree(server, tiny_encoder: SentenceEncoder) -> None:
    floats = post(server, "/v1/embeddings", {"input": SENTENCES[0], "encoding_format": "float"}).json()
    encoded = post(server, "/v1/embeddings", {"input": [SENTENCES[0]], "encoding_format": "base64"}).json()
    from_base64 = np.frombuffer(base64.b64decode(encoded["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(floats["data"][0]["embedding"], tiny_encoder.encode(SENTENCES[0]), atol=1e-6)
    np.testing.assert_array_equal(from_base64, np.float32(floats["data"][0]["embedding"]))
    assert floats["object"] == "list" and floats["model"] == "tiny-bert"


def test_dimensions_truncate_and_renormalise(server, tiny_encoder: SentenceEncoder) -> None:
    body = post(server, "/v1/embeddings", {"input": SENTENCES, "dimensions": 8}).json()
    got = np.array([item["embedding"] for item in body["data"]])
    full = tiny_encoder.encode(SENTENCES)[:, :8]
    np.testing.assert_allclose(got, full / np.linalg.norm(full, axis=1, keepdims=True), atol=1e-6)
    too_many = post(server, "/v1/embeddings", {"input": "x", "dimensions": 33})
    assert too_many.status_code == 422 and too_many.json()["error"]["param"] == "dimensions"


def test_long_input_truncated_and_reported_or_refused(server, tiny_encoder: SentenceEncoder) -> None:
    body = post(server, "/v1/embeddings", {"input": ["rain", LONG]}).json()
    assert body["truncated"] == [{"param": "input[1]", "tokens": 102}]
    assert body["usage"]["prompt_tokens"] == 3 + 64
    np.testing.assert_allclose(body["data"][1]["embedding"], tiny_encoder.encode(LONG), atol=1e-6)
    refused = post(server, "/v1/embeddings", {"input": ["rain", LONG], "truncate": False})
    assert refused.status_code == 413
    error = refused.json()["error"]
    assert error["param"] == "input[1]" and "102 tokens" in error["message"] and "64" in error["message"]


def test_similarity_search_rerank(server, tiny_encoder: SentenceEncoder) -> None:
    vectors = tiny_encoder.encode(SENTENCES)
    cosines = vectors[1:] @ vectors[0] / (np.linalg.norm(vectors[1:], axis=1) * np.linalg.norm(vectors[0]))
    body = post(server, "/similarity", {"source_sentence": SENTENCES[0], "sentences": SENTENCES[1:]}).json()
    np.testing.assert_allclose(body["scores"], cosines, atol=1e-6)
    reranked = post(server, "/rerank", {"query": SENTENCES[0], "documents": SENTENCES[1:], "top_n": 2}).json()
    assert reranked["scorer"] == "bi-encoder"
    assert [r["index"] for r in reranked["results"]] == list(np.argsort(-cosines)[:2])
    assert reranked["results"][0]["document"]["text"] == SENTENCES[1:][int(np.argmax(cosines))]
    cut = post(server, "/similarity", {"source_sentence": "rain", "sentences": ["sun", LONG]}).json()
    assert cut["truncated"] == [{"param": "sentences[1]", "tokens": 102}]
    refused = post(server, "/rerank", {"query": LONG, "documents": ["sun"], "truncate": False})
    assert refused.status_code == 413 and refused.json()["error"]["param"] == "query"
    no_index = post(server, "/search", {"query": "rain"})
    assert no_index.status_code == 404 and "--index" in no_index.json()["error"]["message"]


def test_health_models_metrics_and_other_model(server) -> None:
    health = httpx.get(f"{server.url}/health").json()
    assert health["status"] == "ok" and health["dimension"] == 32 and health["max_input_tokens"] == 64
    assert health["packed_batches"] is False  # PyTorch runs padded batches
    assert health["serving"] == {
        "device": "cpu",
        "precision": "float32",
        "backend": "torch",
        "runner": "torch",
        "max_batch_tokens": 8192,
        "batch_tokens": "padded",
        "cuda_graphs": False,
    }
    assert httpx.get(f"{server.url}/v1/models").json()["data"][0]["id"] == "tiny-bert"
    other = post(server, "/v1/embeddings", {"input": "x", "model": "text-embedding-3-small"})
    assert other.status_code == 404 and other.json()["error"]["param"] == "model"
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'sbert_requests_total{endpoint="/v1/embeddings",status="200"}' in metrics
    assert 'sbert_requests_total{endpoint="/v1/embeddings",status="404"} 1.0' in metrics
    for name in ("sbert_request_duration_seconds_bucket", "sbert_batch_sentences_count", "sbert_queue_items"):
        assert name in metrics
    assert "sbert_batch_tokens_sum" in metrics


def raw_post(server, path: str, content: bytes) -> httpx.Response:  # type: ignore[no-untyped-def]
    headers = {"content-type": "application/json"}
    return httpx.post(f"{server.url}{path}", content=content, headers=headers, timeout=30)


BAD_BODIES = [
    (b'{"input": ["a", ', 400, "body", "invalid JSON"),
    (b'{"input": 5}', 422, "input", "a string or a list of strings"),
    (b'{"input": []}', 422, "input", "must not be empty"),
    (b'{"input": ["a", null, "b"]}', 422, "input[1]", "null"),
    (b'{"input": ["a", 7]}', 422, "input[1]", "number"),
    (b'{"input": "a", "encoding_format": "int8"}', 422, "encoding_format", "'float' or 'base64'"),
    (b'{"input": "a", "dimensions": "8"}', 422, "dimensions", "integer"),
    (b'{"input": "a", "colour": "red"}', 422, "colour", "unknown field"),
    (b'{"model": "tiny-bert"}', 422, "input", "required"),
    (b'["a"]', 422, "body", "JSON object"),
    ('{"input": "caf\u00e9"}'.encode("latin-1"), 400, "body", "UTF-8"),
    (json.dumps({"input": ["a"] * 100_000}).encode(), 413, "input", "100000 items"),
    (b'{"input": "' + b"a" * 10_000_000 + b'"}', 413, "body", "bytes"),
]


@pytest.mark.parametrize(("content", "status", "param", "words"), BAD_BODIES, ids=lambda v: str(v)[:30])
def test_bad_input_is_a_4xx_naming_the_field(
    server, content: bytes, status: int, param: str, words: str
) -> None:
    response = raw_post(server, "/v1/embeddings", content)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["param"] == param and words in error["message"], error


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/similarity", {"source_sentence": "a", "sentences": ["b", None]}, "sentences[1]"),
        ("/similarity", {"source_sentence": 3, "sentences": ["b"]}, "source_sentence"),
        ("/rerank", {"query": "a", "documents": []}, "documents"),
        ("/rerank", {"query": "a", "documents": ["b"], "top_n": 0}, "top_n"),
        ("/search", {"query": ["a"]}, "query"),
    ],
)
def test_bad_input_on_other_endpoints(server, path: str, body: object, param: str) -> None:
    response = post(server, path, body)
    assert response.status_code == 422 and response.json()["error"]["param"] == param


def test_worker_survives_bad_input(server, tiny_encoder: SentenceEncoder) -> None:
    for content, *_ in BAD_BODIES[:6]:
        raw_post(server, "/v1/embeddings", content)
    assert httpx.get(f"{server.url}/v1/embeddings").status_code == 405
    body = raw_post(server, "/v1/embeddings", b'{"input": "\\ud800 lone surrogate"}').json()  # a JSON escape
    assert len(body["data"][0]["embedding"]) == 32
    np.testing.assert_allclose(
        post(server, "/v1/embeddings", {"input": "rain"}).json()["data"][0]["embedding"],
        tiny_encoder.encode("rain"),
        atol=1e-6,
    )


def test_openvino_server_packs_concurrent_requests_into_the_vectors_of_encode(tiny_model_dir: Path) -> None:
    pytest.importorskip("openvino")
    args = ["--model", str(tiny_model_dir), "--precision", "float32", "--backend", "openvino"]
    process = ServerProcess(args).wait_ready()
    try:
        health = httpx.get(f"{process.url}/health").json()
        assert health["packed_batches"] is True
        model = health["model"]
        client = OpenAI(base_url=f"{process.url}/v1", api_key="unused")
        texts = [f"{SENTENCES[i % 4]} {' and more' * (i % 7)}" for i in range(48)]
        with ThreadPoolExecutor(16) as pool:  # concurrent single sentences: merged and packed
            answers = list(pool.map(lambda text: client.embeddings.create(input=text, model=model), texts))
        together = client.embeddings.create(input=texts, model=model)  # one request: several packed rows
        expected = SentenceEncoder.from_pretrained(
            tiny_model_dir, device="cpu", precision="float32", backend="openvino"
        ).encode(texts)  # padded batches
        got = np.array([answer.data[0].embedding for answer in answers], dtype=np.float32)
        np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)
        np.testing.assert_allclose([item.embedding for item in together.data], expected, atol=1e-6, rtol=0)
    finally:
        process.terminate()
        assert process.wait_exit() == 0


def test_prompt_name_on_the_embeddings_and_similarity_routes(prompted_dir: Path) -> None:
    from server_process import tiny_server_args

    model = SentenceEncoder.from_pretrained(prompted_dir, device="cpu", precision="float32", backend="torch")
    served = ServerProcess(tiny_server_args(prompted_dir)).wait_ready()
    try:
        default = post(served, "/v1/embeddings", {"input": SENTENCES}).json()
        document = post(served, "/v1/embeddings", {"input": SENTENCES, "prompt_name": "document"}).json()
        np.testing.assert_allclose(
            [d["embedding"] for d in default["data"]], model.encode(SENTENCES), atol=1e-6
        )
        np.testing.assert_allclose(
            [d["embedding"] for d in document["data"]], model.encode_document(SENTENCES), atol=1e-6
        )
        assert document["usage"]["prompt_tokens"] == sum(
            model.token_counts(SENTENCES, prompt_name="document")
        )
        unknown = post(
            served, "/similarity", {"source_sentence": "a", "sentences": ["b"], "prompt_name": "x"}
        )
        assert unknown.status_code == 422 and unknown.json()["error"]["param"] == "prompt_name"
        assert "'document', 'query'" in unknown.json()["error"]["message"]
        # TEI's routes: the same prompts, the model's default one (query) without prompt_name.
        tei = post(served, "/embed", {"inputs": SENTENCES, "prompt_name": "document"}).json()
        documents = model.encode_document(SENTENCES)
        np.testing.assert_allclose(
            tei, documents / np.linalg.norm(documents, axis=1, keepdims=True), atol=1e-6
        )
        token_vectors = post(served, "/embed_all", {"inputs": SENTENCES}).json()
        assert [len(row) for row in token_vectors] == model.token_counts(SENTENCES)  # query prompt in
        tokens = post(served, "/tokenize", {"inputs": "rain", "prompt_name": "document"}).json()[0]
        assert len(tokens) == model.token_counts(["rain"], prompt_name="document")[0]
    finally:
        served.terminate()
        served.wait_exit()
