"""/search over a saved index and /rerank through a cross-encoder; broken ones stop the server at start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
