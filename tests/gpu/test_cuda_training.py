"""The trainer's CUDA path on a GPU: the plan chosen there, variable-length attention's gradients
against the padded model's, a run in bf16 and in fp16 with the gradient scaler.

The same code runs on the CPU under CUDA's rules in tests/training/test_gpu_training.py; this file
checks what only a GPU can: the flash kernels of ``varlen_attn`` (forward and backward) and the
GradScaler on CUDA. Skips where there is no GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from sbert import SentenceEncoder
from sbert.losses import MultipleNegativesRankingLoss
from sbert.training import Trainer, TrainingConfig
from sbert.training.autocast import TrainingPrecision
from sbert.training.embedder import TrainingEmbedder, embedder_plan

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none"
)

TEXTS = ["a man plays guitar", "the dog", "a child runs in the park and the cat eats food", "food"] * 4
# Flash attention's bf16 rounding differs from the padded SDPA's: a first bound, to be set from the
# GPU's measurement (the test prints it).
VARLEN_BF16_BOUND = 0.05


@pytest.fixture()
def cuda_encoder(tiny_model_dir: Path) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(tiny_model_dir, device="cuda", precision="float32")


def test_the_plan_on_this_gpu(cuda_encoder: SentenceEncoder) -> None:
    plan = embedder_plan(cuda_encoder, low_precision=True)
    assert plan.unpadded and plan.varlen and plan.pin, plan


def test_varlen_gradients_are_the_padded_models_within_bf16(cuda_encoder: SentenceEncoder) -> None:
    cuda_encoder.eval()  # no dropout: variable-length attention runs (it has none)
    weights = torch.randn(
        len(TEXTS), cuda_encoder.dim, device="cuda", generator=torch.Generator("cuda").manual_seed(0)
    )
    loss = MultipleNegativesRankingLoss(cuda_encoder)
    grads = []
    for unpadded in (False, True):
        embedder = TrainingEmbedder(cuda_encoder, loss.token_ids, embedder_plan(cuda_encoder, True, unpadded))
        cuda_encoder.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            vectors = embedder(TEXTS, normalize=True)
        (vectors * weights).sum().backward()
        grads.append({n: p.grad.clone() for n, p in cuda_encoder.named_parameters() if p.grad is not None})
    padded, varlen = grads
    floor = 1e-3 * max(float(g.norm()) for g in padded.values())
    worst = max(float((varlen[n] - padded[n]).norm()) / max(float(padded[n].norm()), floor) for n in padded)
    print(f"worst relative gradient distance, varlen vs padded, bf16: {worst:.2e}")
    assert worst < VARLEN_BF16_BOUND


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_run_in_low_precision(cuda_encoder: SentenceEncoder, tmp_path: Path, dtype: torch.dtype) -> None:
    pairs = [(t, t.upper()) for t in TEXTS]
    from sbert.data.records import ScoredPair

    examples = [ScoredPair(a, b, 1.0) for a, b in pairs] * 4
    config = TrainingConfig(batch_size=8, bf16=True, eval_steps=None, checkpoint_steps=None, log_steps=2)
    config.show_progress_bar = False
    trainer = Trainer(MultipleNegativesRankingLoss(cuda_encoder), examples, tmp_path, config)
    trainer.precision = TrainingPrecision("cuda", dtype, dtype == torch.float16, "test")
    trainer.train()
    losses = [
        json.loads(line).get("loss") for line in (tmp_path / "training_log.jsonl").read_text().splitlines()
    ]
    assert [loss for loss in losses if loss is not None] and all(
        torch.isfinite(p).all() for p in cuda_encoder.parameters()
    )
