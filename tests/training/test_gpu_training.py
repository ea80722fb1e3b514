"""The trainer's CUDA path, run on the CPU under CUDA's rules (tests/cuda_rules.py) in fp32, bf16 and
fp16: no mixed dtypes where CUDA refuses them, no host synchronisation between sync points, the
unpadded forward's gradients those of the padded HF model, the precision chosen and said per device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tests.cuda_rules import CudaRules
from tests.training.test_trainer import toy_pairs

from sbert import SentenceEncoder
from sbert.data import ScoredPair
from sbert.inference.cuda.unpadded import unpadded_batch
from sbert.losses import CachedMultipleNegativesRankingLoss, MultipleNegativesRankingLoss
from sbert.losses.base import SentenceLoss
from sbert.training import Trainer, TrainerState, TrainingConfig
from sbert.training.autocast import TrainingPrecision, training_precision
from sbert.training.embedder import TrainingEmbedder, embedder_plan, set_embedder
from sbert.training.unpadded import unpadded_token_vectors

# What CUDA would run, simulated on the CPU: the dtype of autocast and whether a GradScaler runs.
PRECISIONS = {
    "fp32": TrainingPrecision("cpu", None, False, "test"),
    "bf16": TrainingPrecision("cpu", torch.bfloat16, False, "test: CUDA with bf16"),
    "fp16": TrainingPrecision("cpu", torch.float16, True, "test: CUDA without bf16, GradScaler"),
}


def pairs() -> list[ScoredPair]:
    return toy_pairs()  # MNRL reads sentence1 and sentence2 (the score is not used)


def gpu_trainer(encoder: SentenceEncoder, path: Path, precision: str, **overrides: object) -> Trainer:
    settings: dict[str, object] = {
        "epochs": 2,
        "batch_size": 8,
        "learning_rate": 1e-4,
        "eval_steps": None,
        "checkpoint_steps": None,
        "log_steps": 5,
        "show_progress_bar": False,
    }
    config = TrainingConfig(**(settings | overrides))  # type: ignore[arg-type]
    trainer = Trainer(MultipleNegativesRankingLoss(encoder), pairs(), path, config)
    trainer.precision = PRECISIONS[precision]
    trainer.embedder_plan = embedder_plan(encoder, PRECISIONS[precision].dtype is not None, unpadded=True)
    return trainer


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_no_host_sync_between_sync_points_and_no_dtype_cuda_refuses(
    trainable_encoder: SentenceEncoder, tmp_path: Path, cuda_rules: CudaRules, precision: str
) -> None:
    """The trainer as landed read the loss back after every step (trainer.py ``float(loss.detach())``),
    and transformers' padded BERT checks its mask on the host (``masking_utils``): 2 syncs a step."""
    cuda_rules.on_device(trainable_encoder)
    syncs_after: list[int] = []

    def count(state: TrainerState) -> None:
        syncs_after.append(len(cuda_rules.syncs))

    trainer = gpu_trainer(trainable_encoder, tmp_path, precision)
    trainer.callbacks.append(count)
    result = trainer.train()
    assert result.global_step == 20 and cuda_rules.checked > 0
    per_step = [b - a for a, b in zip([syncs_after[0], *syncs_after], syncs_after)]
    # Steps 5, 10, 15, 20 are sync points (log_steps 5; 10 and 20 end the epochs): the losses are read
    # there, in one copy, and the weights' norm is checked. Every other step: nothing.
    quiet = [syncs for step, syncs in enumerate(per_step, 1) if step % 5]
    assert quiet == [0] * 16, [str(s) for s in cuda_rules.syncs]
    assert max(per_step) <= 2
    log = [json.loads(line) for line in (tmp_path / "training_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if "loss" in r] == [5, 10, 15, 20]
    assert all(0 < r["loss"] < 10 for r in log if "loss" in r)


def test_the_steps_host_work_is_prepared_ahead(trainable_encoder: SentenceEncoder, tmp_path: Path) -> None:
    trainer = gpu_trainer(trainable_encoder, tmp_path, "fp32")
    prepared: list[int] = []
    original = TrainingEmbedder.__call__

    def watched(self: TrainingEmbedder, texts: list[str], normalize: bool) -> torch.Tensor:
        prepared.append(self.prepared_ahead)
        return original(self, texts, normalize)

    TrainingEmbedder.__call__ = watched  # type: ignore[method-assign]
    try:
        trainer.train()
    finally:
        TrainingEmbedder.__call__ = original  # type: ignore[method-assign]
    assert len(prepared) == 20 and prepared[-1] == 19  # every step's batch was ready but the first


def test_a_nan_loss_is_skipped_on_the_device_then_stops_the_run(
    trainable_encoder: SentenceEncoder, tmp_path: Path
) -> None:
    from sbert.training import TrainingDivergedError

    trainer = gpu_trainer(trainable_encoder, tmp_path, "fp32", checkpoint_steps=4)
    objective = trainer.objective
    original = objective.forward
    kept: dict[str, torch.Tensor] = {}

    def poisoned(examples: list[ScoredPair]) -> torch.Tensor:
        loss = original(examples)
        return loss * float("nan") if trainer.state.global_step >= 5 else loss

    def remember(state: TrainerState) -> None:
        if state.global_step == 5:
            kept.update({k: v.clone() for k, v in objective.state_dict().items()})

    objective.forward = poisoned  # type: ignore[method-assign]
    trainer.callbacks.append(remember)
    with pytest.raises(TrainingDivergedError, match=r"loss is nan at step 6 "):
        trainer.train()
    after = objective.state_dict()
    assert all(torch.equal(kept[k], after[k]) for k in kept)  # steps 6-8 left the weights as they were


def padded_and_unpadded_gradients(
    encoder: SentenceEncoder, texts: list[str], precision: TrainingPrecision
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """Gradients of the same loss (the vectors' weighted sum) through the padded HF model and the
    unpadded forward, dropout off; and the two forward outputs."""
    encoder.eval()
    weights = torch.randn(len(texts), encoder.dim, generator=torch.Generator().manual_seed(0))
    loss = MultipleNegativesRankingLoss(encoder)
    grads, outputs = [], []
    for unpadded in (False, True):
        embedder = TrainingEmbedder(encoder, loss.token_ids, embedder_plan(encoder, False, unpadded=unpadded))
        encoder.zero_grad()
        with precision.autocast():
            vectors = embedder(texts, normalize=True)  # (texts, dim) float32
        (vectors * weights).sum().backward()
        outputs.append(vectors.detach())
        grads.append({n: p.grad.clone() for n, p in encoder.named_parameters() if p.grad is not None})
    return grads[0], grads[1], outputs[0], outputs[1]


TEXTS = ["a man plays guitar", "the dog", "a child runs in the park and the cat eats food", "food"]


def worst_distance(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> tuple[float, str]:
    """The largest distance between two sets of gradients, parameter by parameter, relative to the
    parameter's gradient norm or a thousandth of the largest, whichever is more: the keys' biases
    have a gradient of zero in exact arithmetic (softmax ignores a shift), rounding noise in practice."""
    floor = 1e-3 * max(float(g.norm()) for g in want.values())
    return max((float((got[n] - want[n]).norm()) / max(float(want[n].norm()), floor), n) for n in want)


def test_unpadded_gradients_equal_the_padded_models_in_fp32(trainable_encoder: SentenceEncoder) -> None:
    padded, unpadded, out_p, out_u = padded_and_unpadded_gradients(
        trainable_encoder, TEXTS, PRECISIONS["fp32"]
    )
    assert torch.allclose(out_p, out_u, atol=1e-5)
    assert padded.keys() == unpadded.keys() and len(padded) > 10
    worst, name = worst_distance(unpadded, padded)
    assert worst < 1e-5, name  # measured: 3e-7


def test_no_accumulating_scatter_over_duplicate_indices(trainable_encoder: SentenceEncoder) -> None:
    """Padded blocks were gathered as ``flat[token_index]``, whose padding entries all read token 0:
    the backward's ``index_put_(accumulate=True)`` then summed thousands of duplicates of one index,
    which CUDA does one at a time (pytorch/pytorch#41162); it grew every step's device time with the batch."""
    from torch.utils._python_dispatch import TorchDispatchMode

    duplicates: list[int] = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            if "index_put" in str(func) and (args[3] if len(args) > 3 else kwargs.get("accumulate")):
                index = torch.cat([i.flatten() for i in args[1] if i is not None])
                duplicates.append(index.numel() - index.unique().numel())
            return func(*args, **kwargs)

    trainable_encoder.train()
    loss = MultipleNegativesRankingLoss(trainable_encoder)
    embedder = TrainingEmbedder(
        trainable_encoder, loss.token_ids, embedder_plan(trainable_encoder, False, True)
    )
    with Watch():
        vectors = embedder(TEXTS, normalize=True)  # lengths 5 to 13 tokens: padding in the block
        vectors.sum().backward()
    trainable_encoder.zero_grad()
    assert duplicates == [0] * len(duplicates)  # the flat_index gathers' backward: unique indices


# Under autocast both paths round the same values the same way (a linear layer's rows are independent,
# so padding does not change a real token's rounding); what differs is the order of float32 sums
# inside the kernels of other shapes. Measured on the tiny BERT, worst over all parameters: bf16
# 1.4e-7, fp16 7.6e-6 (the CPU's fp16 kernels block differently); bounds 10x that. On a GPU the
# flash kernels of variable-length attention round differently from the padded SDPA: benchmarks/
# gpu_train.py compares the loss curves there.
LOW_PRECISION_BOUND = {"bf16": 1e-5, "fp16": 1e-4}


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_unpadded_gradients_in_low_precision_within_the_bound(
    trainable_encoder: SentenceEncoder, cuda_rules: CudaRules, precision: str
) -> None:
    cuda_rules.on_device(trainable_encoder)
    padded, unpadded, _, _ = padded_and_unpadded_gradients(trainable_encoder, TEXTS, PRECISIONS[precision])
    worst, name = worst_distance(unpadded, padded)
    assert worst < LOW_PRECISION_BOUND[precision], (worst, name)
    assert cuda_rules.checked > 0


@pytest.mark.parametrize("loss_class", [MultipleNegativesRankingLoss, CachedMultipleNegativesRankingLoss])
def test_in_batch_losses_see_every_negative_on_the_unpadded_path(
    trainable_encoder: SentenceEncoder, loss_class: type[SentenceLoss]
) -> None:
    trainable_encoder.eval()
    batch = pairs()[:12]
    loss = loss_class(trainable_encoder)
    padded = loss(batch).detach()
    embedder = TrainingEmbedder(
        trainable_encoder, loss.token_ids, embedder_plan(trainable_encoder, False, True)
    )
    assert set_embedder(loss, embedder)
    assert torch.allclose(loss(batch).detach(), padded, atol=1e-5)


def test_unpadded_forward_is_the_padded_models(trainable_encoder: SentenceEncoder) -> None:
    model = trainable_encoder.transformer.model.eval()
    ids = trainable_encoder.token_ids(TEXTS).ids
    tokens = unpadded_token_vectors(model, unpadded_batch(ids))  # (total, hidden)
    features = trainable_encoder.transformer.collate(ids)
    padded = model(**features).last_hidden_state[features["attention_mask"].bool()]  # (total, hidden)
    assert torch.allclose(tokens, padded, atol=1e-5)


def test_the_precision_is_chosen_per_device_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert training_precision(cuda, True).name == "bf16" and not training_precision(cuda, True).scaled
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    fp16 = training_precision(cuda, True)
    assert fp16.name == "fp16" and fp16.scaled and "gradient scaler" in fp16.describe()
    assert training_precision(cuda, False).name == "fp32"


def test_the_plan_is_written_to_the_training_log(trainable_encoder: SentenceEncoder, tmp_path: Path) -> None:
    gpu_trainer(trainable_encoder, tmp_path, "fp16", epochs=1).train()
    plan = json.loads((tmp_path / "training_log.jsonl").read_text().splitlines()[1])
    assert plan["event"] == "plan" and "fp16 with a gradient scaler" in plan["precision"]
    assert plan["forward"].startswith("real tokens only")


def test_dev_evaluations_between_prefetched_steps(trainable_encoder: SentenceEncoder, tmp_path: Path) -> None:
    """Without length grouping the prefetch thread tokenizes; the evaluator tokenizes on the main
    thread: the trainer lets the thread finish first (one Rust tokenizer, one thread at a time)."""
    from sbert.evaluation import SimilarityEvaluator

    trainer = gpu_trainer(trainable_encoder, tmp_path, "fp32", group_by_length=False, eval_steps=2)
    trainer.evaluator, trainer.metric = SimilarityEvaluator(toy_pairs(), name="toy"), "spearman_cosine"
    result = trainer.train()
    assert result.global_step == 20 and len(trainer.state.dev_scores) == 10
