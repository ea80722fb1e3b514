"""Errors on a real server: TEI's routes answer in TEI's shape, ``{"error", "error_type"}``, with TEI's
statuses (text-embeddings-inference's ``ErrorType`` and ``router/src/http/server.rs``), whatever
failed (the body's bytes, its JSON, a field, a limit, the model); OpenAI's and sbert's routes keep
sbert's shape. The gate's refusals (401, 429, 503) are in tests/server/test_limits.py."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_process import SRC, ServerProcess, tiny_server_args

from sbert import SentenceEncoder

LONG = " ".join(["music"] * 100)  # 102 tokens: over the tiny model's 64
TOO_MANY = ["a"] * 2049  # over the default --max-items
HUGE = b'{"inputs": "' + b"a" * 2_000_100 + b'"}'  # over the default --max-body-bytes
SIMILARITY = {"inputs": {"source_sentence": "rain", "sentences": ["sun"]}}


def send(server: ServerProcess, path: str, body: object, method: str = "POST") -> httpx.Response:
    """``body`` as JSON, or as is when it is bytes."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    return httpx.request(method, f"{server.url}{path}", content=content, headers=headers, timeout=30)


def tei_error(response: httpx.Response, status: int, error_type: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "error_type"} and body["error_type"] == error_type, body
    assert isinstance(body["error"], str)
    return str(body["error"])


def sbert_error(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
    return dict(body["error"])


@pytest.mark.parametrize(
    ("path", "body", "status", "error_type", "start"),
    [
        # a body TEI's JSON extractor (axum) refuses: 422
        ("/embed", {"inputs": ["a", None]}, 422, "Validation", "inputs[1]: should be a valid string"),
        (
            "/embed",
            {"inputs": TOO_MANY},
            413,
            "Validation",
            "inputs: 2049 items, more than the limit of 2048",
        ),
        ("/embed", {"inputs": LONG}, 413, "Validation", "inputs[0]: 102 tokens, more than the model's limit"),
        ("/embed", {"inputs": "a", "dimensions": 1000}, 413, "Validation", "dimensions: 1000 is more than"),
        ("/embed", ["a"], 422, "Validation", "body: expected a JSON object, got a list of 1"),
        ("/embed_all", {"inputs": ["a", LONG]}, 413, "Validation", "inputs[1]: 102 tokens"),
        ("/embed_all", {"inputs": TOO_MANY}, 413, "Validation", "inputs: 2049 items"),
        ("/tokenize", {"inputs": "a", "prompt_name": 3}, 422, "Validation", "prompt_name: "),
        ("/tokenize", {"inputs": TOO_MANY}, 413, "Validation", "inputs: 2049 items"),
        ("/decode", {"ids": [[5], [10**6]]}, 422, "Tokenizer", "ids[1][0]: 1000000 is not a token id"),
        ("/decode", {"ids": [[5]] * 2049}, 413, "Validation", "ids: 2049 items"),
        ("/rerank", {"query": "q", "texts": ["a", LONG]}, 413, "Validation", "texts[1]: 102 tokens"),
        ("/rerank", {"query": "q", "texts": TOO_MANY}, 413, "Validation", "texts: 2049 items"),
        ("/rerank", {"query": None, "texts": ["a"]}, 422, "Validation", "query: should be a valid string"),
        (
            "/similarity",
            {"inputs": {"source_sentence": LONG, "sentences": ["a"]}},
            413,
            "Validation",
            "inputs.source_sentence: 102 tokens",
        ),
        (
            "/similarity",
            {**SIMILARITY, "parameters": {"truncate": 1}},
            422,
            "Validation",
            "parameters.truncate",
        ),
        (
            "/similarity",
            {"inputs": {"source_sentence": "a", "sentences": TOO_MANY}},
            413,
            "Validation",
            "inputs.sentences: 2049 items, more than the limit of 2048",
        ),
        # TEI's 400 "Empty": an empty list
        ("/embed", {"inputs": []}, 400, "Empty", "inputs: must not be empty"),
        ("/embed_all", {"inputs": []}, 400, "Empty", "inputs: must not be empty"),
        ("/tokenize", {"inputs": []}, 400, "Empty", "inputs: must not be empty"),
        ("/decode", {"ids": [[5], []]}, 400, "Empty", "ids[1]: must not be empty"),
        ("/rerank", {"query": "q", "texts": []}, 400, "Empty", "texts: must not be empty"),
        (
            "/similarity",
            {"inputs": {"source_sentence": "a", "sentences": []}},
            400,
            "Empty",
            "inputs.sentences: must not be empty",
        ),
        # bytes that are no JSON body (TEI's axum answers these in plain text): 400, "Validation"
        ("/embed", b'{"inputs": ', 400, "Validation", "body: invalid JSON at line 1, column 12"),
        ("/tokenize", b'{"inputs": "\xff"}', 400, "Validation", "body: not valid UTF-8 (byte 12"),
        # over the byte limit: 413, as TEI's body limit
        ("/embed", HUGE, 413, "Validation", "body: 2000114 bytes, more than the limit of 2000000"),
        ("/decode", HUGE, 413, "Validation", "body: 2000114 bytes"),
    ],
)
def test_tei_routes_answer_errors_in_tei_shape(
    server: ServerProcess, path: str, body: object, status: int, error_type: str, start: str
) -> None:
    message = tei_error(send(server, path, body), status, error_type)
    assert message.startswith(start), message


def test_wrong_method_on_a_tei_route(server: ServerProcess) -> None:
    assert tei_error(send(server, "/embed", b"", method="GET"), 405, "Validation") == "Method Not Allowed"
    assert tei_error(send(server, "/info", {}), 405, "Validation") == "Method Not Allowed"


@pytest.mark.parametrize(
    ("path", "body", "status", "param"),
    [
        ("/v1/embeddings", {"input": ["a", None]}, 422, "input[1]"),
        ("/v1/embeddings", {"input": []}, 422, "input"),
        ("/v1/embeddings", {"input": TOO_MANY}, 413, "input"),
        ("/v1/embeddings", {"input": LONG, "truncate": False}, 413, "input[0]"),
        ("/v1/embeddings", b'{"input": ', 400, "body"),
        ("/v1/embeddings", {"input": "a", "model": "other"}, 404, "model"),
        ("/rerank", {"query": "q", "documents": []}, 422, "documents"),  # Cohere's body
        ("/similarity", {"source_sentence": "a", "sentences": [None]}, 422, "sentences[0]"),  # sbert's
        ("/rerank", b"[", 400, "body"),  # no body to tell TEI's from: the route's own shape
    ],
)
def test_openai_and_sbert_routes_keep_sbert_shape(
    server: ServerProcess, path: str, body: object, status: int, param: str
) -> None:
    error = sbert_error(send(server, path, body), status)
    assert error["param"] == param and str(error["message"]).startswith(f"{param}: ")


@pytest.fixture(scope="module")
def overreaching_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny BERT saved with a ``max_seq_length`` of 128 over its 64 positions, a misconfiguration
    some published models have: an input of 65 to 128 tokens passes the length check, then fails in
    the model's forward pass."""
    folder = tmp_path_factory.mktemp("overreaching") / "model"
    SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32", backend="torch").save(
        folder
    )
    (config,) = folder.rglob("sentence_bert_config.json")
    config.write_text(json.dumps({**json.loads(config.read_text()), "max_seq_length": 128}))
    return folder


@pytest.fixture(scope="module")
def overreaching(
    overreaching_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    # sbert refuses this misconfiguration at load (tests/test_model_checks.py); to reach a real
    # failure in the forward pass, this server starts with that one check switched off.
    hooks = tmp_path_factory.mktemp("hooks")
    (hooks / "sitecustomize.py").write_text(
        "import sbert.modules.checks, sbert.modules.transformer\n"
        "for module in (sbert.modules.checks, sbert.modules.transformer):\n"
        "    module.check_max_seq_length = lambda *args, **kwargs: None\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(hooks), str(SRC)])}
    process = ServerProcess(tiny_server_args(overreaching_model_dir), env=env).wait_ready()
    yield process
    process.kill()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/embed", {"inputs": ["rain", LONG]}),
        ("/embed_all", {"inputs": LONG}),
        ("/rerank", {"query": "rain", "texts": [LONG]}),
        ("/similarity", {"inputs": {"source_sentence": "rain", "sentences": [LONG]}}),
    ],
)
def test_a_model_failure_is_tei_backend_424(overreaching: ServerProcess, path: str, body: object) -> None:
    message = tei_error(send(overreaching, path, body), 424, "Backend")
    assert message.startswith("internal error: RuntimeError: "), message
    assert send(overreaching, "/embed", {"inputs": "rain"}).status_code == 200  # the worker lives on


def test_a_model_failure_stays_500_on_openai_route(overreaching: ServerProcess) -> None:
    error = sbert_error(send(overreaching, "/v1/embeddings", {"input": LONG}), 500)
    assert error["type"] == "server_error" and str(error["message"]).startswith(
        "internal error: RuntimeError"
    )
