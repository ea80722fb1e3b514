"""Several models in one real server: a request picks one by ``model``, each model answers with its own
vectors (its own batcher), an unknown name is a 404 listing the served ones."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from openai import OpenAI
from server_process import ServerProcess
from tests.conftest import build_tiny_bert

from sbert import SentenceEncoder

TEXTS = ["a man plays the guitar", "the dog runs in the park", "rain"]
TORCH = ["--precision", "float32", "--backend", "torch"]


@pytest.fixture(scope="module")
def other_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("other-bert"), seed=1)  # other weights


@pytest.fixture(scope="module")
def two(tiny_model_dir: Path, other_dir: Path) -> Iterator[ServerProcess]:
    args = ["--model", f"tiny={tiny_model_dir}", "--model", f"other={other_dir}", *TORCH]
    process = ServerProcess(args).wait_ready()
    yield process
    process.terminate()
    process.wait_exit()


def encoder(path: Path) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(path, device="cpu", precision="float32", backend="torch")


def embed(server: ServerProcess, body: dict) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/embeddings", json=body, timeout=30)


def test_each_request_gets_the_model_it_names(
    two: ServerProcess, tiny_model_dir: Path, other_dir: Path
) -> None:
    expected = {"tiny": encoder(tiny_model_dir).encode(TEXTS), "other": encoder(other_dir).encode(TEXTS)}
    assert not np.allclose(expected["tiny"], expected["other"], atol=1e-3)
    for name in ("tiny", "other"):
        answer = embed(two, {"input": TEXTS, "model": name}).json()
        assert answer["model"] == name
        np.testing.assert_allclose([d["embedding"] for d in answer["data"]], expected[name], atol=1e-6)
    default = embed(two, {"input": TEXTS}).json()  # no model: the first
    assert default["model"] == "tiny"
    client = OpenAI(base_url=f"{two.url}/v1", api_key="unused")
    got = client.embeddings.create(input=TEXTS, model="other")
    np.testing.assert_allclose([d.embedding for d in got.data], expected["other"], atol=1e-6)
    similarity = {"source_sentence": "rain", "sentences": TEXTS, "model": "other"}
    assert httpx.post(f"{two.url}/similarity", json=similarity).json()["model"] == "other"
    rerank = {"query": "rain", "documents": TEXTS, "model": "other"}
    assert httpx.post(f"{two.url}/rerank", json=rerank).json()["model"] == "other"


def test_concurrent_requests_to_both_models_stay_apart(
    two: ServerProcess, tiny_model_dir: Path, other_dir: Path
) -> None:
    expected = {"tiny": encoder(tiny_model_dir).encode(TEXTS), "other": encoder(other_dir).encode(TEXTS)}
    names = ["tiny", "other"] * 16
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda name: embed(two, {"input": TEXTS, "model": name}).json(), names))
    for name, answer in zip(names, answers):
        assert answer["model"] == name
        np.testing.assert_allclose([d["embedding"] for d in answer["data"]], expected[name], atol=1e-6)


def test_unknown_model_is_a_404_listing_the_served_ones(two: ServerProcess) -> None:
    refused = embed(two, {"input": "rain", "model": "large"})
    assert refused.status_code == 404
    error = refused.json()["error"]
    assert error["param"] == "model" and "'tiny', 'other'" in error["message"]
    listed = httpx.get(f"{two.url}/v1/models").json()
    assert [m["id"] for m in listed["data"]] == ["tiny", "other"]
    assert httpx.get(f"{two.url}/health").json()["models"] == ["tiny", "other"]


def test_two_models_of_one_name_stop_the_server(tiny_model_dir: Path, other_dir: Path) -> None:
    process = ServerProcess(["--model", f"m={tiny_model_dir}", "--model", f"m={other_dir}", *TORCH])
    assert process.wait_exit(120) != 0
    assert "two models named 'm'" in process.output()


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("", "--served-model-name '': the name is empty"),
        ("tiny=", "--served-model-name 'tiny=': the name after MODEL= is empty"),
    ],
    ids=["empty", "model-equals-nothing"],
)
def test_an_empty_served_name_stops_the_server(tiny_model_dir: Path, given: str, says: str) -> None:
    """A blank name would be served and answered under ``""``: refused before a model is loaded."""
    process = ServerProcess(["--model", f"tiny={tiny_model_dir}", "--served-model-name", given, *TORCH])
    assert process.wait_exit(60) != 0
    output = process.output()
    assert says in output and "Traceback" not in output
