"""Every kind of sparse model through the server's batcher with the dense model's cuts: a CSR model
(a top-k autoencoder on a dense transformer, whose pooling leaves the prompt out), an inference-free
Router served on the exact path (int8 asked: the sparse engine computes float32 there), and a Router
whose default route is its static query side. Each one's merged take is cut by ``--max-batch-tokens``
(padded tokens) and ``--max-batch-size``, a refused request fails alone, the batch is counted once,
and each request's vectors are the model's own ``encode()`` (``encode_query()`` where the default
route is the query route) within 1e-6; sentence-transformers' SparseEncoder is the oracle of the
served CSR vectors with a prompt.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch
from server_process import ServerProcess, tiny_server_args
from test_embed_sparse import LONG, assert_same, pairs, post
from tests.conftest import build_tiny_bert
from tests.sparse.conftest import build_tiny_mlm

from sbert import SparseEncoder
from sbert.modules import SparseStaticEmbedding
from sbert.server.batcher import BatchStats, InputTooLong
from sbert.server.run import build_service
from sbert.server.settings import BatchSettings, ServeOptions
from sbert.server.sparse_served import served, sparse_rows

PROMPTS = {"query": "query: "}
BUDGET = 40  # padded tokens a pass may hold
# CSR's weights reach 8: float32 means over batches padded otherwise move them a few units in the
# last place (1.4e-6 seen), so within 1e-6 relative as well as 1e-6 absolute
RTOL = 1e-6


def assert_close(answer: list[list[dict[str, Any]]], expected: list[tuple[list[int], Any]]) -> None:
    assert_same(answer, expected, rtol=RTOL)


def build_csr(root: Path) -> Path:
    """CSR saved by sentence-transformers with a ``query`` prompt: the tiny dense BERT, mean pooling
    that leaves the prompt out (``include_prompt=False``) and a random top-k autoencoder (32 → 128, k=16)."""
    from sentence_transformers import SparseEncoder as STSparseEncoder
    from sentence_transformers.base.modules import Transformer as STTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from sentence_transformers.sparse_encoder.modules import SparseAutoEncoder

    dense = build_tiny_bert(root / "bert")
    torch.manual_seed(2)
    autoencoder = SparseAutoEncoder(32, hidden_dim=128, k=16, k_aux=32)
    with torch.no_grad():
        autoencoder.encoder.weight.normal_()
        autoencoder.latent_bias.normal_(0, 0.1)
    modules = [STTransformer(str(dense)), Pooling(32, "mean", include_prompt=False), autoencoder]
    STSparseEncoder(modules=modules, prompts=PROMPTS, device="cpu").save(str(root / "csr"))
    return root / "csr"


def build_router(root: Path, default_route: str) -> Path:
    """Inference-free SPLADE saved by sentence-transformers: a static query side (random weights), the
    tiny MLM with max pooling on the document side, ``default_route`` what a plain encode() runs."""
    from sentence_transformers import SparseEncoder as STSparseEncoder
    from sentence_transformers.base.modules import Router
    from sentence_transformers.base.modules import Transformer as STTransformer
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding as STStatic
    from sentence_transformers.sparse_encoder.modules import SpladePooling
    from transformers import AutoTokenizer

    mlm = build_tiny_mlm(root / "mlm")
    tokenizer = AutoTokenizer.from_pretrained(mlm)
    weight = torch.rand(len(tokenizer.get_vocab()), generator=torch.Generator().manual_seed(1))
    router = Router.for_query_document(
        query_modules=[STStatic(tokenizer, weight=weight)],
        document_modules=[STTransformer(str(mlm), transformer_task="fill-mask"), SpladePooling("max")],
        default_route=default_route,
    )
    path = root / f"router-{default_route}"
    STSparseEncoder(modules=[router], prompts=PROMPTS, device="cpu").save(str(path))
    return path


@pytest.fixture(scope="module")
def csr_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_csr(tmp_path_factory.mktemp("csr"))


@pytest.fixture(scope="module")
def models(csr_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, SparseEncoder]:
    """The three models none of which the shared engine runs (each plan is the exact path)."""
    root = tmp_path_factory.mktemp("routers")
    load = SparseEncoder.from_pretrained
    return {
        "csr": load(csr_dir, device="cpu", precision="float32", backend="torch"),
        "router-exact": load(build_router(root, "document"), device="cpu", precision="int8"),
        "router-query": load(build_router(root, "query"), device="cpu", precision="float32"),
    }


def requests_of(count: int) -> list[list[str]]:
    """Requests of one to three texts of mixed lengths."""
    words = ["a man plays the guitar", "the dog runs in the park", "rain"]
    return [[f"{words[i % 3]} {'again ' * (i % 5)}"] * (1 + i % 3) for i in range(count)]


@pytest.mark.parametrize("kind", ["csr", "router-exact", "router-query"])
def test_an_exact_path_sparse_models_merged_batches_follow_max_batch_tokens(
    kind: str, models: dict[str, SparseEncoder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One take of twelve requests, cut into passes of at most the budget of padded tokens (the
    dense model's PyTorch cuts; before: ``encode()``'s batches of ``--max-batch-size``, the whole
    take in one pass); a request refused for its length fails alone; every other request gets
    ``encode()``'s vectors, with a prompt too."""
    model = models[kind]
    assert model.planning.fixed  # the exact path: what this file is about
    batcher = build_service(
        served(model), ServeOptions(batching=BatchSettings(max_batch_tokens=BUDGET))
    ).batcher
    stats: list[BatchStats] = []
    batcher.on_batch = stats.append
    module = type(model.input_module)  # the default route's: its collate pads every exact pass
    collate = module.collate
    passes: list[tuple[int, int]] = []  # (sentences, longest) of each pass

    def spy(self: Any, batch_ids: Any) -> dict[str, torch.Tensor]:
        features = collate(self, batch_ids)
        passes.append(tuple(features["input_ids"].shape))  # type: ignore[arg-type]
        return features

    monkeypatch.setattr(module, "collate", spy)
    requests = requests_of(12)
    static = isinstance(model.input_module, SparseStaticEmbedding)
    # refused for its length, alone (a static table's limit is its tokenizer's: none to pass here)
    refused = None if static else batcher.embed(["rain", LONG], truncate=False)
    futures = [batcher.embed(texts) for texts in requests]  # queued before the worker takes them
    assert batcher.step()  # one take: every request
    sentences = sum(len(texts) for texts in requests)
    assert sum(size for size, _ in passes) == sentences and len(passes) > 1, passes
    assert all(size * longest <= BUDGET for size, longest in passes), passes
    assert (batcher.tokens is None) == static  # a transformer's texts are tokenized on arrival
    for texts, future in zip(requests, futures):
        assert_close(sparse_rows(future.result(0).vectors), pairs(model, texts))
        if kind == "router-query":  # the default route is the query route: encode_query's vectors
            assert_close(sparse_rows(future.result(0).vectors), pairs(model.route("query"), texts))
    if refused is not None:
        with pytest.raises(InputTooLong, match=r"input\[1\] has 102 tokens"):
            refused.result(0)
    assert [(s.requests, s.sentences) for s in stats] == [(len(requests), sentences)]
    prompted = batcher.embed(requests[4], prompt="query: ")
    assert batcher.step()
    assert_close(sparse_rows(prompted.result(0).vectors), pairs(model, requests[4], prompt_name="query"))
    batcher.close()


def test_a_csr_model_served_with_a_prompt_leaves_the_prompt_out(
    csr_dir: Path, models: dict[str, SparseEncoder]
) -> None:
    """/embed_sparse with the ``query`` prompt of a CSR model whose pooling leaves the prompt out:
    concurrent requests (merged on the batcher) get ``encode(prompt_name="query")``'s vectors and
    sentence-transformers' own, not those of the prompt's text read as part of each sentence. With
    the prompt's length dropped from the merged batch's options (sparse_served.encode_token_ids),
    the mean takes the prompt's tokens in and this test fails."""
    from sentence_transformers import SparseEncoder as STSparseEncoder

    model = models["csr"]
    texts = ["a man plays the guitar", "the dog runs in the park", "rain", "sun and rain"]
    bodies = [
        {"inputs": [text, texts[(i + 1) % 4]], "prompt_name": "query"} for i, text in enumerate(texts * 3)
    ]
    server = ServerProcess(tiny_server_args(csr_dir)).wait_ready()
    try:
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda body: post(server, "/embed_sparse", body), bodies))
        served_rows = post(server, "/embed_sparse", {"inputs": texts, "prompt_name": "query"}).json()
    finally:
        server.terminate()
        server.wait_exit()
    oracle = STSparseEncoder(str(csr_dir), device="cpu")
    for body, answer in zip(bodies, answers):
        assert answer.status_code == 200, answer.text
        assert_close(answer.json(), pairs(model, body["inputs"], prompt_name="query"))
        theirs = oracle.encode(body["inputs"], prompt_name="query").to_dense().numpy()
        assert_close(answer.json(), [(row.nonzero()[0].tolist(), row[row != 0]) for row in theirs])
    included = pairs(model, [f"query: {text}" for text in texts])  # the prompt's tokens in the mean
    assert any([item["index"] for item in row] != ids for row, (ids, _) in zip(served_rows, included))
