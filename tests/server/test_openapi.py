"""/openapi.json and /docs of a real server: a valid OpenAPI 3.1 document that real answers match,
Swagger UI served from the package, and schemathesis with every check (TRACE included) finding nothing,
with and without an API key."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from openapi_spec_validator import validate
from server_process import ServerProcess, tiny_server_args
from transformers import BertTokenizerFast

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


def test_the_document_is_valid_openapi_31_and_names_every_route(
    server: ServerProcess, spec, tiny_model_dir: Path
) -> None:
    validate(spec)  # openapi-spec-validator: raises on an invalid document
    assert spec["openapi"] == "3.1.0"
    assert {op.path for op in OPERATIONS} == set(spec["paths"])
    body = spec["components"]["schemas"]["EmbeddingRequest"]
    assert body["additionalProperties"] is False and body["required"] == ["input"]
    assert body["properties"]["input"]["maxItems"] == 2048  # the server's --max-items
    vocabulary = len(BertTokenizerFast.from_pretrained(tiny_model_dir))
    served = {"prompts": [], "dimension": 32, "cross_encoder": False, "vocabulary": vocabulary}
    assert spec == build_spec(title="tiny-bert", **served)  # the same document in process
    # What the server refuses, the document says: bounds written as JSON Schema's own keywords
    # (not pydantic's `ge`), the model's width, its vocabulary, no raw scores without a cross-encoder.
    dimensions = spec["components"]["schemas"]["EmbedRequest"]["properties"]["dimensions"]["anyOf"][0]
    assert dimensions == {"type": "integer", "minimum": 1, "maximum": 32}
    token_id = spec["components"]["schemas"]["DecodeRequest"]["properties"]["ids"]["items"]
    assert (token_id["minimum"], token_id["maximum"]) == (0, vocabulary - 1)
    for rerank in ("RerankRequest", "TEIRerankRequest"):  # either body: 422 without a cross-encoder
        assert spec["components"]["schemas"][rerank]["properties"]["raw_scores"]["enum"] == [False]
    assert '"ge"' not in json.dumps(spec)
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


# Where the API legitimately answers a status that a check of schemathesis does not expect (its
# defaults: negative data 400/401/403/404/405/406/409/415/422/428/429/5xx, positive data
# 2xx/3xx/401/403/404/409/429/5xx), the checker is configured (CHECKER), not the server:
# - negative_data_rejection + 413: a list over --max-items (the document's maxItems) is 413 "too
#   large" on every route, as text-embeddings-inference answers a batch over its limit; TEI's routes
#   answer an unknown prompt_name 413 "Validation" as TEI does. Both statuses are declared.
# - positive_data_acceptance + 413: how many tokens the model's tokenizer makes of a text is no
#   thing JSON Schema can bound, so a schema-valid input may be over the model's limit with
#   `truncate: false` (413, declared). Every other bound the server checks is in the document
#   (maxItems; minimum and maximum: the model's dimension and vocabulary; enums: prompt names,
#   `raw_scores` without a cross-encoder), so a 422 for valid data stays a failure. (One 422 is
#   left that no schema can say either: TEI's `truncation_direction: Left` on an input that needs
#   cutting, which sbert does not do; a fuzzer's short strings do not reach it.)
# A random `model` is a 404 (declared), which the positive check already expects.
CHECKER = Path(__file__).with_name("schemathesis.toml")


def fuzz(url: str, seconds: int, folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """schemathesis's CLI over the document: every check (TRACE and other unexpected methods in its
    coverage phase), a few examples per operation, no shrinking, a fixed seed; it fuzzes until
    ``seconds`` are spent. It runs in ``folder``: its cache of failures (``.schemathesis``, replayed
    by the next run) stays out of the repository and out of the next test."""
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CHECKER), "run"]
    command += [f"{url}/openapi.json", "--checks", "all", "--max-examples", "8", "--max-time", str(seconds)]
    command += ["--no-shrink", "--seed", "37", "--workers", "1", "--output-truncate", "false", *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=folder)


def test_schemathesis_with_every_check_finds_nothing(server: ServerProcess, tmp_path: Path) -> None:
    """Valid and invalid bodies drawn from the document, unexpected methods, missing bodies: every
    answer is the one the document declares, valid data accepted, invalid refused, no 5xx."""
    result = fuzz(server.url, 45, tmp_path)
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-2000:]
    # The server's own count: every operation was called, none answered with a 5xx.
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    counted = re.findall(r'sbert_requests_total\{endpoint="([^"]+)",status="(\d+)"\} ([0-9.]+)', metrics)
    # 424 too: TEI's routes answer a failure of the model so (TEI's "Backend"), no input should cause
    # one; but /embed_sparse answers this dense model 424 as TEI does (declared, schemathesis.toml).
    failed = [line for line in counted if line[1].startswith("5") or line[1] == "424"]
    assert not [line for line in failed if line[:2] != ("/embed_sparse", "424")], counted
    fuzzed = {endpoint for endpoint, _, _ in counted}
    assert {op.path for op in OPERATIONS} <= fuzzed


def test_schemathesis_with_an_api_key(tiny_model_dir: Path, tmp_path: Path) -> None:
    """With --api-key: every request but the open ones answers 401 without the key (schemathesis's
    ``ignored_auth`` sends each without it), and the document declares that 401 and the scheme."""
    args = tiny_server_args(tiny_model_dir, "--served-model-name", "tiny-bert", "--api-key", "secret")
    process = ServerProcess(args).wait_ready()
    try:
        result = fuzz(process.url, 20, tmp_path, "--header", "Authorization: Bearer secret")
        assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-2000:]
        metrics = httpx.get(f"{process.url}/metrics", headers={"Authorization": "Bearer secret"}, timeout=30)
        assert 'status="401"' in metrics.text  # the unauthenticated requests were made and refused
    finally:
        process.terminate()
        process.wait_exit()
