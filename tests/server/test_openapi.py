"""/openapi.json and /docs of a real server: a valid OpenAPI 3.1 document that real answers match,
Swagger UI served from the package, and a schema-driven fuzzer that finds no 5xx."""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from openapi_spec_validator import validate
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, response_schema_conformance
from server_process import ServerProcess

from sbert.server.openapi import build_spec
from sbert.server.routes import OPERATIONS

SENTENCES = ["a man plays the guitar", "the dog runs in the park", "rain"]
LONG = " ".join(["music"] * 100)  # over the tiny model's 64 tokens


@pytest.fixture(scope="module")
def spec(server: ServerProcess) -> dict[str, Any]:
    return httpx.get(f"{server.url}/openapi.json", timeout=30).json()


def answer_schema(spec: dict[str, Any], path: str, method: str, status: int) -> dict[str, Any]:
    """The schema the document gives for one answer, resolvable on its own."""
    media = spec["paths"][path][method]["responses"][str(status)]["content"]
    schema = next(iter(media.values()))["schema"]
    return {**schema, "components": spec["components"]}


def check(spec: dict[str, Any], path: str, method: str, response: httpx.Response) -> None:
    schema = answer_schema(spec, path, method, response.status_code)
    jsonschema.Draft202012Validator(schema).validate(response.json())


def test_the_document_is_valid_openapi_31_and_names_every_route(server: ServerProcess, spec) -> None:
    validate(spec)  # openapi-spec-validator: raises on an invalid document
    assert spec["openapi"] == "3.1.0"
    assert {op.path for op in OPERATIONS} == set(spec["paths"])
    body = spec["components"]["schemas"]["EmbeddingRequest"]
    assert body["additionalProperties"] is False and body["required"] == ["input"]
    assert body["properties"]["input"]["maxItems"] == 2048  # the server's --max-items
    assert spec == build_spec(title="tiny-bert", prompts=[])  # the same document in process
    assert body["properties"]["prompt_name"]["anyOf"] == [{"type": "null"}]  # the model has no prompts
    validate(build_spec(api_key=True))


def test_real_answers_match_the_document(server: ServerProcess, spec) -> None:
    url = server.url
    for body in (
        {"input": SENTENCES},
        {"input": SENTENCES[0], "encoding_format": "base64"},
        {"input": ["rain", LONG], "dimensions": 8},
    ):
        check(spec, "/v1/embeddings", "post", httpx.post(f"{url}/v1/embeddings", json=body, timeout=30))
    similarity = {"source_sentence": "rain", "sentences": SENTENCES}
    check(spec, "/similarity", "post", httpx.post(f"{url}/similarity", json=similarity, timeout=30))
    for extra in ({}, {"top_n": 1, "return_documents": False}):
        rerank = {"query": "music", "documents": SENTENCES, **extra}
        check(spec, "/rerank", "post", httpx.post(f"{url}/rerank", json=rerank, timeout=30))
    for path in ("/health", "/v1/models"):
        check(spec, path, "get", httpx.get(f"{url}{path}", timeout=30))
    tei = [
        ("/embed", {"inputs": SENTENCES}),
        ("/embed_all", {"inputs": "rain"}),
        ("/tokenize", {"inputs": SENTENCES}),
        ("/similarity", {"inputs": {"source_sentence": "rain", "sentences": SENTENCES}}),
        ("/decode", {"ids": [2, 5, 3]}),
        ("/decode", {"ids": [[2, 5, 3], [5]]}),
        ("/rerank", {"query": "music", "texts": SENTENCES, "return_text": True}),
    ]
    for path, body in tei:
        check(spec, path, "post", httpx.post(f"{url}{path}", json=body, timeout=30))
    check(spec, "/info", "get", httpx.get(f"{url}/info", timeout=30))
    errors = [
        ("/search", {"query": "rain"}, 404),  # no index loaded
        ("/v1/embeddings", {"input": [None]}, 422),
        ("/v1/embeddings", {"input": LONG, "truncate": False}, 413),
        ("/v1/embeddings", {"input": "x", "model": "other"}, 404),
        ("/rerank", {"query": "rain", "documents": []}, 422),
        # TEI's routes and bodies: TEI's error body
        ("/embed", {"inputs": []}, 400),
        ("/embed", {"inputs": LONG}, 413),
        ("/embed_all", {"inputs": ["a"] * 2049}, 413),
        ("/tokenize", {"inputs": 3}, 422),
        ("/decode", {"ids": [10**6]}, 422),
        ("/rerank", {"query": "rain", "texts": []}, 400),
        ("/similarity", {"inputs": {"source_sentence": LONG, "sentences": ["a"]}}, 413),
    ]
    for path, body, status in errors:
        response = httpx.post(f"{url}{path}", json=body, timeout=30)
        assert response.status_code == status
        check(spec, path, "post", response)


def test_docs_load_from_the_server_alone(server: ServerProcess) -> None:
    page = httpx.get(f"{server.url}/docs", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(asset.startswith("/docs/static/") for asset in assets)  # no CDN
    assert "validatorUrl: null" in page.text  # no call to validator.swagger.io either
    for asset in assets:
        response = httpx.get(f"{server.url}{asset}", timeout=30)
        assert response.status_code == 200 and len(response.content) > 1000, asset
    missing = httpx.get(f"{server.url}/docs/static/nothing.js", timeout=30)
    assert missing.status_code == 404 and "error" in missing.json()


@pytest.mark.parametrize("mode", list(GenerationMode), ids=lambda mode: mode.value)
def test_fuzzed_requests_get_no_server_error(server: ServerProcess, mode: GenerationMode) -> None:
    """Bodies drawn from the document (valid, then invalid ones), a few per operation, no shrinking,
    no example database: every answer is below 500 and, where the document describes it, matches it."""
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    for result in schema.get_all_operations():
        operation = result.ok()
        if mode is GenerationMode.NEGATIVE and operation.method == "get":
            continue  # no body, no parameters: nothing to get wrong

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=12,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def call(case: Any) -> None:
            case.call_and_validate(checks=[not_a_server_error, response_schema_conformance], timeout=30)

        call()
    # The server's own count: every operation was called, none answered with a 5xx.
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    counted = re.findall(r'sbert_requests_total\{endpoint="([^"]+)",status="(\d+)"\} ([0-9.]+)', metrics)
    # 424 too: TEI's routes answer a failure of the model so (TEI's "Backend"), no input should cause one.
    assert not [line for line in counted if line[1].startswith("5") or line[1] == "424"], counted
    fuzzed = {endpoint for endpoint, _, _ in counted}
    assert {op.path for op in OPERATIONS if mode is GenerationMode.POSITIVE or op.method == "post"} <= fuzzed
