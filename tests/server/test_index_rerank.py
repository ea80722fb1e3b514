"""/search over a saved index and /rerank through a cross-encoder; broken ones stop the server at start."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import torch
from server_process import ServerProcess, tiny_server_args

from sbert import SentenceEncoder
from sbert.cross_encoder import CrossEncoder
from sbert.index import VectorIndex

CORPUS = [
    "a man plays the guitar",
    "a woman plays the piano",
    "the dog runs in the park",
    "rain on the street",
]


@pytest.fixture(scope="module")
def folders(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("serve-index")
    encoder = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    VectorIndex.build(encoder.encode(CORPUS), texts=CORPUS, kind="flat", model_name=encoder.name).save(
        root / "index"
    )
    torch.manual_seed(0)
    CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu").save(root / "cross")
    return {"index": root / "index", "cross": root / "cross"}


@pytest.fixture(scope="module")
def full_server(tiny_model_dir: Path, folders: dict[str, Path]) -> Iterator[ServerProcess]:
    extra = ["--index", str(folders["index"]), "--cross-encoder", str(folders["cross"])]
    process = ServerProcess(tiny_server_args(tiny_model_dir, *extra)).wait_ready()
    yield process
    process.kill()


def test_search_returns_the_index_hits_with_texts(
    full_server, folders, tiny_encoder: SentenceEncoder
) -> None:
    body = httpx.post(f"{full_server.url}/search", json={"query": "a man plays music", "top_k": 2}).json()
    index = VectorIndex.load(folders["index"], tiny_encoder)
    expected = index.search(tiny_encoder.encode(["a man plays music"]), top_k=2)[0]
    assert [r["corpus_id"] for r in body["results"]] == [hit.corpus_id for hit in expected]
    np.testing.assert_allclose([r["score"] for r in body["results"]], [h.score for h in expected], atol=1e-5)
    assert [r["text"] for r in body["results"]] == [CORPUS[hit.corpus_id] for hit in expected]
    assert httpx.get(f"{full_server.url}/health").json()["index"] == str(folders["index"])


def test_rerank_uses_the_cross_encoder(full_server, folders) -> None:
    body = httpx.post(f"{full_server.url}/rerank", json={"query": "music", "documents": CORPUS}).json()
    scores = CrossEncoder.from_pretrained(folders["cross"], device="cpu").predict(
        [("music", d) for d in CORPUS]
    )
    assert body["scorer"] == "cross-encoder"
    assert [r["index"] for r in body["results"]] == list(np.argsort(-scores, kind="stable"))
    np.testing.assert_allclose(
        [r["relevance_score"] for r in body["results"]], np.sort(scores)[::-1], atol=1e-6
    )
    too_long = {"query": "music", "documents": ["rain", " ".join(["music"] * 80)], "truncate": False}
    refused = httpx.post(f"{full_server.url}/rerank", json=too_long)
    assert refused.status_code == 413 and refused.json()["error"]["param"] == "documents[1]"


def test_tei_rerank_uses_the_cross_encoder_and_its_raw_logits(full_server, folders) -> None:
    cross_encoder = CrossEncoder.from_pretrained(folders["cross"], device="cpu")
    pairs = [("music", d) for d in CORPUS]
    for raw in (False, True):
        body = {"query": "music", "texts": CORPUS, "raw_scores": raw, "return_text": True}
        ranks = httpx.post(f"{full_server.url}/rerank", json=body).json()
        scores = cross_encoder.predict(pairs, apply_activation=not raw)
        assert [r["index"] for r in ranks] == list(np.argsort(-scores, kind="stable"))
        np.testing.assert_allclose([r["score"] for r in ranks], np.sort(scores)[::-1], atol=1e-6)
        assert [r["text"] for r in ranks] == [CORPUS[r["index"]] for r in ranks]
    other = httpx.post(f"{full_server.url}/rerank", json={"query": "a", "documents": ["b"], "model": "x"})
    assert other.status_code == 404 and "(cross-encoder)" in other.json()["error"]["message"]
    too_long = {"query": "music", "texts": ["rain", " ".join(["music"] * 80)]}  # TEI: truncate false
    refused = httpx.post(f"{full_server.url}/rerank", json=too_long)
    assert (
        refused.status_code == 413
    )  # TEI's status (ErrorType::Validation) and error body for an input over the limit
    assert refused.json()["error_type"] == "Validation" and refused.json()["error"].startswith("texts[1]: ")


def _batch_counts(server: ServerProcess) -> dict[str, float]:
    """The merged batches of pairs, and the requests and inputs of all merged batches, from /metrics."""
    wanted = ('sbert_batches_total{kind="pairs"}', "sbert_batch_requests_sum", "sbert_batch_sentences_sum")
    lines = httpx.get(f"{server.url}/metrics").text.splitlines()
    values = dict(line.rsplit(" ", 1) for line in lines if line.startswith(wanted))
    return {name: float(values.get(name, 0)) for name in wanted}


def test_concurrent_reranks_of_both_bodies_ride_the_batcher_with_predicts_scores(
    full_server: ServerProcess, folders: dict[str, Path]
) -> None:
    """Each /rerank is a pair job on the batcher (merged with those queued beside it), counted in
    /metrics as a batch of pairs: the code as landed ran each as an opaque call, counted nowhere."""
    cross_encoder = CrossEncoder.from_pretrained(folders["cross"], device="cpu")
    queries = [f"query {i} " + "music " * (i % 5) for i in range(12)]
    bodies: list[dict[str, Any]] = [
        {"query": q, "texts": CORPUS[i % 3 :], "raw_scores": True}
        if i % 2
        else {"query": q, "documents": CORPUS[i % 3 :], "top_n": 2, "return_documents": True}
        for i, q in enumerate(queries)
    ]
    before = _batch_counts(full_server)
    with ThreadPoolExecutor(len(bodies)) as pool:
        answers = list(
            pool.map(lambda body: httpx.post(f"{full_server.url}/rerank", json=body, timeout=60), bodies)
        )
    after = _batch_counts(full_server)
    for body, answer in zip(bodies, answers):
        documents = body.get("texts", body.get("documents"))
        expected = cross_encoder.predict(
            [(body["query"], d) for d in documents], apply_activation="texts" not in body
        )
        order = list(np.argsort(-expected, kind="stable"))
        if "texts" in body:  # TEI's answer: every text, best first
            assert [r["index"] for r in answer.json()] == order
            np.testing.assert_allclose(
                [r["score"] for r in answer.json()], expected[order], atol=1e-6, rtol=0
            )
        else:
            results = answer.json()["results"]
            assert [r["index"] for r in results] == order[:2]
            assert [r["document"]["text"] for r in results] == [documents[i] for i in order[:2]]
            np.testing.assert_allclose(
                [r["relevance_score"] for r in results], expected[order[:2]], atol=1e-6, rtol=0
            )
    pairs = sum(len(body.get("texts", body.get("documents"))) for body in bodies)
    batches = after['sbert_batches_total{kind="pairs"}'] - before['sbert_batches_total{kind="pairs"}']
    assert 1 <= batches <= len(bodies)
    assert after["sbert_batch_requests_sum"] - before["sbert_batch_requests_sum"] == len(bodies)
    assert after["sbert_batch_sentences_sum"] - before["sbert_batch_sentences_sum"] == pairs


def test_rerank_refusals_with_a_cross_encoder(full_server: ServerProcess) -> None:
    left = {"query": "music", "texts": CORPUS, "truncate": True, "truncation_direction": "Left"}
    refused = httpx.post(f"{full_server.url}/rerank", json=left)
    assert refused.status_code == 413 and refused.json()["error_type"] == "Validation"  # TEI's status for it
    assert refused.json()["error"].startswith("truncation_direction: Left")
    wrong = httpx.post(f"{full_server.url}/rerank", json={"query": "music", "documents": ["a", 3]})
    assert wrong.status_code == 422 and "documents[1]" in wrong.json()["error"]["message"]
    both = {"query": "music", "documents": ["rain", " ".join(["music"] * 80), "sun"], "truncate": False}
    too_long = httpx.post(f"{full_server.url}/rerank", json=both)
    assert too_long.status_code == 413 and too_long.json()["error"]["param"] == "documents[1]"
    assert httpx.post(f"{full_server.url}/rerank", json={**both, "truncate": True}).status_code == 200


def start_fails(args: list[str]) -> str:
    process = ServerProcess(args)
    assert process.wait_exit(120) == 1
    return process.output()


def test_a_corrupt_index_stops_the_server_at_start(tiny_model_dir: Path, folders, tmp_path: Path) -> None:
    broken = tmp_path / "index"
    broken.mkdir()
    for file in folders["index"].iterdir():
        (broken / file.name).write_bytes(file.read_bytes())
    faiss_file = broken / "index.faiss"
    faiss_file.write_bytes(faiss_file.read_bytes()[:-8])
    output = start_fails(tiny_server_args(tiny_model_dir, "--index", str(broken)))
    assert f"{faiss_file}: " in output and "checksum" in output


def test_a_plain_encoder_is_refused_as_cross_encoder(tiny_model_dir: Path) -> None:
    output = start_fails(tiny_server_args(tiny_model_dir, "--cross-encoder", str(tiny_model_dir)))
    assert f"{tiny_model_dir}: not a cross-encoder" in output


def test_search_cuts_the_query_for_a_prefix_index(tiny_model_dir: Path, tmp_path: Path) -> None:
    encoder = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    index = VectorIndex.build(
        encoder.encode(CORPUS), texts=CORPUS, kind="flat", model_name=encoder.name, dimensions=8
    )
    index.save(tmp_path / "prefix")
    process = ServerProcess(
        tiny_server_args(tiny_model_dir, "--index", str(tmp_path / "prefix"))
    ).wait_ready()
    try:
        body = httpx.post(f"{process.url}/search", json={"query": "a man plays music", "top_k": 4}).json()
    finally:
        process.kill()
    expected = index.search(index.query_vectors(encoder.encode(["a man plays music"])), top_k=4)[0]
    assert [r["corpus_id"] for r in body["results"]] == [hit.corpus_id for hit in expected]
    np.testing.assert_allclose([r["score"] for r in body["results"]], [h.score for h in expected], atol=1e-5)
