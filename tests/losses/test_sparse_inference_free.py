"""Inference-free SPLADE training (a Router: static query side, MLM document side): SpladeLoss
without query regularisation on sbert's SparseEncoder against sentence-transformers' on the same
saved model — the loss, the gradients of both routes, and what one optimiser step changes, with
the static side trainable (at its own learning rate, ST's ``learning_rate_mapping``) or frozen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from sentence_transformers import SparseEncoder as STSparseEncoder
from sentence_transformers.sparse_encoder import losses as st_losses
from tests.losses.test_sparse_losses import BATCH, build_tiny_mlm

from sbert import SparseEncoder
from sbert.losses import SparseMultipleNegativesRankingLoss, SpladeLoss
from sbert.training.schedule import build_optimizer

STATIC_LR = 1e-2  # ST's docs train the static side at a higher rate than the transformer


def build_router(path: Path, mlm_dir: Path, frozen: bool) -> Path:
    from sentence_transformers.base.modules import Router, Transformer
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding, SpladePooling
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(mlm_dir)
    weight = torch.rand(len(tokenizer.get_vocab()), generator=torch.Generator().manual_seed(1))
    router = Router.for_query_document(
        query_modules=[SparseStaticEmbedding(tokenizer, weight=weight, frozen=frozen)],
        document_modules=[Transformer(str(mlm_dir), transformer_task="fill-mask"), SpladePooling("max")],
    )
    STSparseEncoder(modules=[router], device="cpu", similarity_fn_name="dot").save(str(path))
    return path


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_mlm(tmp_path_factory.mktemp("mlm"))


def st_loss_value(model: Any) -> torch.Tensor:
    """sentence-transformers' SpladeLoss, the columns routed as its router_mapping would:
    anchors to the query route, positives and negatives to the document route."""
    loss = st_losses.SpladeLoss(
        model, st_losses.SparseMultipleNegativesRankingLoss(model), 3e-2, query_regularizer_weight=None
    )
    columns = [[e.anchor for e in BATCH], [e.positive for e in BATCH], [e.negative for e in BATCH]]
    tasks = ["query", "document", "document"]
    features = [model.preprocess(texts, task=task) for texts, task in zip(columns, tasks, strict=True)]
    return sum(loss(features, None).values())


def by_name(model: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    """Parameters by a name both libraries share: ``static`` for the query table, the Hugging Face
    name (``model.bert...``) for the document side's transformer."""
    named = {}
    for name, parameter in model.named_parameters():
        if name.endswith(("query.0.weight", "query.input_module.weight")):
            named["static"] = parameter
        else:
            named[name[name.index("model.") :]] = parameter
    return named


@pytest.mark.parametrize("frozen", [False, True])
def test_one_step_changes_what_sentence_transformers_changes(
    mlm_dir: Path, tmp_path: Path, frozen: bool
) -> None:
    folder = build_router(tmp_path / "router", mlm_dir, frozen)
    ours_model = SparseEncoder.from_pretrained(folder, device="cpu")
    theirs_model = STSparseEncoder(str(folder), device="cpu")
    ours_model.train(), theirs_model.train()
    ours_loss = SpladeLoss(
        ours_model, SparseMultipleNegativesRankingLoss(ours_model), 3e-2, query_regularizer_weight=None
    )
    value, theirs = ours_loss(BATCH), st_loss_value(theirs_model)
    assert value.item() == pytest.approx(theirs.item(), rel=1e-5)
    value.backward()
    theirs.backward()
    ours, oracle = by_name(ours_model), by_name(theirs_model)
    assert set(ours) == set(oracle)
    largest = max(float(p.grad.abs().max()) for p in oracle.values() if p.grad is not None)
    for name, parameter in oracle.items():
        assert ours[name].requires_grad == parameter.requires_grad, name
        if parameter.grad is None:
            assert ours[name].grad is None, name
        else:
            assert torch.allclose(ours[name].grad, parameter.grad, rtol=1e-4, atol=1e-4 * largest), name
    assert (oracle["static"].grad is None) == frozen  # the query table learns unless frozen

    mapping = {} if frozen else {"static|query": STATIC_LR}
    before = {name: p.detach().clone() for name, p in ours.items()}
    for model in (ours_model, theirs_model):
        build_optimizer(model, 1e-3, 0.01, mapping).step()
    changed = {name for name, p in ours.items() if not torch.equal(p, before[name])}
    changed_theirs = {name for name, p in oracle.items() if not torch.equal(p, before[name])}
    assert changed == changed_theirs
    assert ("static" in changed) == (
        not frozen
    ) and "model.bert.encoder.layer.0.output.dense.weight" in changed
    if not frozen:  # AdamW's first step moves each entry by about its rate: the static side's own
        assert float((ours["static"] - before["static"]).abs().max()) == pytest.approx(STATIC_LR, rel=0.01)
        layer = "model.bert.encoder.layer.0.output.dense.weight"
        assert float((ours[layer] - before[layer]).abs().max()) == pytest.approx(1e-3, rel=0.05)
