"""The sparse losses against sentence-transformers' (the oracle): FLOPS, SparseMNRL and SpladeLoss
values and gradients, the regulariser warm-up against SpladeRegularizerWeightSchedulerCallback."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from sentence_transformers.sparse_encoder import SparseEncoder as STSparseEncoder
from sentence_transformers.sparse_encoder import losses as st_losses
from sentence_transformers.sparse_encoder.callbacks.splade_callbacks import (
    SpladeRegularizerWeightSchedulerCallback,
)
from tests.conftest import build_tiny_bert
from transformers import BertConfig, BertForMaskedLM

from sbert.data import Triplet
from sbert.losses import (
    FlopsLoss,
    RegularizerWarmup,
    SparseMultipleNegativesRankingLoss,
    SpladeLoss,
)

BATCH = [
    Triplet("what causes rain?", "rain falls from clouds.", "a dog barks at night."),
    Triplet("a man plays guitar", "someone makes music.", "the cat sleeps."),
    Triplet("who won the game?", "the team won 3 to 1.", "it is raining today."),
]


def build_tiny_mlm(path: Path, seed: int = 0) -> Path:
    """A random BertForMaskedLM (hidden 32, 2 layers) over the tiny WordPiece vocabulary, without
    dropout: gradients are compared in training mode (sentence-transformers' SpladePooling works in
    place, without gradients, in evaluation mode)."""
    build_tiny_bert(path, seed)
    torch.manual_seed(seed)
    config = BertConfig.from_pretrained(path, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    BertForMaskedLM(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_mlm(tmp_path_factory.mktemp("tiny_mlm"))


@pytest.fixture()
def st_model(tiny_mlm_dir: Path) -> Any:
    return STSparseEncoder(str(tiny_mlm_dir), device="cpu")


def sparse_like(rows: int, vocab: int = 50, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.relu(torch.randn(rows, vocab, generator=generator)).requires_grad_()


def st_columns(model: Any, batch: list[Triplet]) -> list[dict[str, torch.Tensor]]:
    columns = [[e.anchor for e in batch], [e.positive for e in batch], [e.negative for e in batch]]
    return [model.tokenize(column) for column in columns]


@pytest.mark.parametrize("threshold", [None, 20])
def test_flops_equals_sentence_transformers_value_and_gradient(st_model: Any, threshold: int | None) -> None:
    ours_in, theirs_in = sparse_like(6), sparse_like(6)
    ours = FlopsLoss(st_model, threshold=threshold)(ours_in)  # sentence-transformers' signature
    theirs = st_losses.FlopsLoss(st_model, threshold=threshold).compute_loss_from_embeddings(theirs_in)
    ours.backward()
    theirs.backward()
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)
    assert torch.allclose(ours_in.grad, theirs_in.grad, atol=1e-7)


def test_flops_rejects_a_negative_threshold() -> None:
    with pytest.raises(ValueError, match="threshold must be >= 0"):
        FlopsLoss(threshold=-1)


def test_sparse_mnrl_equals_sentence_transformers_on_embeddings(st_model: Any) -> None:
    ours_in = [sparse_like(4, seed=s) for s in range(3)]
    theirs_in = [sparse_like(4, seed=s) for s in range(3)]
    ours = SparseMultipleNegativesRankingLoss(st_model).compute_loss_from_embeddings(ours_in)
    theirs = st_losses.SparseMultipleNegativesRankingLoss(st_model).compute_loss_from_embeddings(
        theirs_in, None
    )
    ours.backward()
    theirs.backward()
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)
    for a, b in zip(ours_in, theirs_in):
        assert torch.allclose(a.grad, b.grad, atol=1e-7)


@pytest.mark.parametrize(
    "options",
    [
        {"document_regularizer_weight": 3e-2, "query_regularizer_weight": 5e-2},
        {"document_regularizer_weight": 3e-2, "query_regularizer_weight": None},
        {"document_regularizer_weight": 3e-2, "use_document_regularizer_only": True},
        {
            "document_regularizer_weight": 3e-2,
            "query_regularizer_weight": 5e-2,
            "document_regularizer_threshold": 5,
            "query_regularizer_threshold": 5,
        },
    ],
)
def test_splade_loss_equals_sentence_transformers_end_to_end(
    tiny_mlm_dir: Path, options: dict[str, Any]
) -> None:
    """The same tiny MLM through both losses: value and every parameter's gradient."""
    ours_model = STSparseEncoder(str(tiny_mlm_dir), device="cpu")
    theirs_model = STSparseEncoder(str(tiny_mlm_dir), device="cpu")
    ours_model.train(), theirs_model.train()
    ours = SpladeLoss(ours_model, SparseMultipleNegativesRankingLoss(ours_model), **options)
    theirs_parts = st_losses.SpladeLoss(
        theirs_model, st_losses.SparseMultipleNegativesRankingLoss(theirs_model), **options
    )(st_columns(theirs_model, BATCH), None)
    theirs = sum(theirs_parts.values())
    parts = ours.components(BATCH)
    assert set(parts) == set(theirs_parts)
    for name, value in parts.items():
        assert value.item() == pytest.approx(theirs_parts[name].item(), rel=1e-5, abs=1e-7), name
    value = ours(BATCH)
    assert value.item() == pytest.approx(theirs.item(), rel=1e-5)
    value.backward()
    theirs.backward()
    assert_same_gradients(ours_model, theirs_model)


def assert_same_gradients(ours: torch.nn.Module, theirs: torch.nn.Module, rel: float = 1e-4) -> None:
    """Every gradient within ``rel`` of the oracle's, relative to the largest gradient entry (so the
    exact zeros of e.g. attention key biases, 1e-12 of noise, do not count as differences)."""
    pairs = list(zip(ours.named_parameters(), theirs.named_parameters(), strict=True))
    assert all(a.shape == b.shape for (_, a), (_, b) in pairs)  # the same parameters, in the same order
    largest = max(float(b.grad.abs().max()) for _, (_, b) in pairs if b.grad is not None)
    checked = 0
    for (name, a), (_, b) in pairs:
        if b.grad is None:
            assert a.grad is None or not a.grad.any(), name
            continue
        assert a.grad is not None, name
        assert torch.allclose(a.grad, b.grad, rtol=rel, atol=rel * largest), name
        checked += 1
    assert checked > 0


def test_warmup_equals_sentence_transformers_callback(st_model: Any) -> None:
    """Step by step, the weights of a 20-step run (7 steps of quadratic warm-up), and linear."""
    for kind in ("quadratic", "linear"):
        st_loss = st_losses.SpladeLoss(
            st_model, st_losses.SparseMultipleNegativesRankingLoss(st_model), 3e-5, 5e-5
        )
        callback = SpladeRegularizerWeightSchedulerCallback(st_loss, scheduler_type=kind)
        callback.on_train_begin(None, SimpleNamespace(max_steps=20), None)
        ours = SpladeLoss(
            st_model,
            SparseMultipleNegativesRankingLoss(st_model),
            3e-5,
            5e-5,
            warmup=RegularizerWarmup(20, kind=kind),  # type: ignore[arg-type]
        )
        for step in range(20):
            callback.on_step_begin(None, SimpleNamespace(global_step=step), None)
            document, query = ours.regularizer_weights(step)
            assert document == pytest.approx(st_loss.document_regularizer_weight, abs=1e-15), (kind, step)
            assert query == pytest.approx(st_loss.query_regularizer_weight, abs=1e-15), (kind, step)


def test_splade_loss_counts_training_steps_and_keeps_them_in_its_state(st_model: Any, tmp_path: Path) -> None:
    loss = SpladeLoss(
        st_model, SparseMultipleNegativesRankingLoss(st_model), 1.0, 1.0, warmup=RegularizerWarmup(9)
    )
    loss.train()
    assert loss.regularizer_weights() == (0.0, 0.0)  # step 0: no regularisation yet
    loss(BATCH[:2])
    loss(BATCH[:2])
    assert loss.step == 2
    assert loss.regularizer_weights() == pytest.approx((4 / 9, 4 / 9))
    from safetensors.torch import load_model, save_model  # what the trainer's checkpoints use

    save_model(loss, str(tmp_path / "objective.safetensors"))
    resumed = SpladeLoss(st_model, SparseMultipleNegativesRankingLoss(st_model), 1.0, 1.0)
    missing, unexpected = load_model(resumed, str(tmp_path / "objective.safetensors"), strict=False)
    assert not missing and not unexpected
    assert resumed.step == 2
    state = loss.state_dict()
    fresh = SpladeLoss(
        st_model, SparseMultipleNegativesRankingLoss(st_model), 1.0, 1.0, warmup=RegularizerWarmup(9)
    )
    fresh.load_state_dict(state)
    assert fresh.step == 2
    loss.eval()
    loss(BATCH[:2])
    assert loss.step == 2  # evaluation passes do not advance the schedule


def test_splade_loss_rejects_a_base_loss_without_embeddings_entry(st_model: Any) -> None:
    with pytest.raises(ValueError, match="compute_loss_from_embeddings"):
        SpladeLoss(st_model, torch.nn.MSELoss(), 3e-5)
    with pytest.raises(ValueError, match="document_regularizer_weight must be >= 0"):
        SpladeLoss(st_model, SparseMultipleNegativesRankingLoss(st_model), -1.0)


@pytest.mark.parametrize("base", ["splade", "mnrl"])
def test_sbert_sparse_encoder_loss_and_gradients_equal_sentence_transformers(
    tiny_mlm_dir: Path, base: str
) -> None:
    """sbert's SparseEncoder and sentence-transformers' on the same tiny MLM, same batch: the loss
    within 1e-5 and every parameter's gradient within 1e-4 (relative)."""
    from sbert import SparseEncoder

    ours_model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu")
    theirs_model = STSparseEncoder(str(tiny_mlm_dir), device="cpu")
    ours_model.train(), theirs_model.train()
    if base == "splade":
        ours: Any = SpladeLoss(ours_model, SparseMultipleNegativesRankingLoss(ours_model), 3e-2, 5e-2)
        st_loss = st_losses.SpladeLoss(
            theirs_model, st_losses.SparseMultipleNegativesRankingLoss(theirs_model), 3e-2, 5e-2
        )
        theirs = sum(st_loss(st_columns(theirs_model, BATCH), None).values())
    else:
        ours = SparseMultipleNegativesRankingLoss(ours_model)
        st_mnrl = st_losses.SparseMultipleNegativesRankingLoss(theirs_model)
        embeddings = [theirs_model(f)["sentence_embedding"] for f in st_columns(theirs_model, BATCH)]
        theirs = st_mnrl.compute_loss_from_embeddings(embeddings, None)
    value = ours(BATCH)
    assert value.item() == pytest.approx(theirs.item(), rel=1e-5)
    value.backward()
    theirs.backward()
    assert_same_gradients(ours_model, theirs_model)
