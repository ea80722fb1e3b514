"""The sparse recipe as a library call: a training file, a BEIR dev folder, and an inference-free
model whose static query table trains at its own learning rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tests.losses.test_sparse_inference_free import build_router
from tests.losses.test_sparse_losses import BATCH, build_tiny_mlm

from sbert import SparseEncoder
from sbert.data.beir import RetrievalSet
from sbert.losses import SpladeLoss
from sbert.training.recipes import RecipeConfig, train_recipe
from sbert.training.sparse_recipe import sparse_objective, static_learning_rates


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    mlm = build_tiny_mlm(tmp_path_factory.mktemp("mlm"))
    return build_router(tmp_path_factory.mktemp("router") / "model", mlm, frozen=False)


def write_triplets(path: Path) -> Path:
    rows = "".join(f"{e.anchor}\t{e.positive}\t{e.negative}\n" for e in BATCH * 3)
    path.write_text("anchor\tpositive\tnegative\n" + rows, encoding="utf-8")
    return path


def write_dev(folder: Path) -> Path:
    corpus = {
        f"d{i}": text
        for i, text in enumerate(sorted({e.positive for e in BATCH} | {e.negative for e in BATCH}))
    }
    ids = {text: doc for doc, text in corpus.items()}
    queries = {f"q{i}": e.anchor for i, e in enumerate(BATCH)}
    qrels = {f"q{i}": {ids[e.positive]: 1} for i, e in enumerate(BATCH)}
    RetrievalSet("dev", corpus, queries, qrels).save(folder, split="dev")
    return folder


def test_inference_free_recipe_trains_the_static_table_and_reports_sparse_metrics(
    router_dir: Path, tmp_path: Path
) -> None:
    config = RecipeConfig(
        "sparse",
        tmp_path / "out",
        base=str(router_dir),
        train_file=str(write_triplets(tmp_path / "train.tsv")),
        dev_retrieval=str(write_dev(tmp_path / "dev")),
        query_regularizer_weight=None,
        batch_size=3,
        learning_rate=1e-3,
        device="cpu",
        show_progress_bar=False,
    )
    result = train_recipe(config)
    assert result.global_step == 3
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["query_regularizer_weight"] is None and 0 <= results["best_dev_ndcg@10"] <= 1
    assert {"query_active_dims", "corpus_active_dims", "avg_flops"} <= set(results["dev"])
    before = SparseEncoder.from_pretrained(router_dir, device="cpu").route("query").input_module.weight
    after = SparseEncoder.from_pretrained(tmp_path / "out", device="cpu").route("query").input_module.weight
    assert not torch.equal(before, after)  # the query table learned (it is not frozen)


def test_the_static_table_gets_its_own_rate_and_a_frozen_one_none(router_dir: Path, tmp_path: Path) -> None:
    model = SparseEncoder.from_pretrained(router_dir, device="cpu")
    objective = sparse_objective(RecipeConfig("sparse", tmp_path, base=str(router_dir)), model)
    assert isinstance(objective, SpladeLoss)
    mapping = static_learning_rates(objective, 1e-3)
    assert list(mapping.values()) == [1e-3] and "query" in next(iter(mapping))
    model.route("query").input_module.weight.requires_grad_(False)
    assert static_learning_rates(objective, 1e-3) == {}
