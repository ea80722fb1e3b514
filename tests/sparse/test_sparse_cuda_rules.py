"""The sparse encoder's CUDA paths run on the CPU under CUDA's rules (tests/cuda_rules.py), in fp32,
bf16 and fp16: encoding (the exact float32 path CUDA runs, whatever precision is asked) and the
training step (the trainer's autocast in bf16 or fp16), with no mixed dtypes CUDA refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tests.cuda_rules import CudaRules

from sbert import SparseEncoder
from sbert.data import Triplet
from sbert.losses import SparseMultipleNegativesRankingLoss, SpladeLoss

SENTENCES = ["a man plays the guitar", "rain falls", "the stock market fell sharply today"]


# CUDA runs the exact float32 path whatever is asked (the GPU's float16 default included: "auto").
@pytest.mark.parametrize("precision", ["auto", "float32", "bfloat16"])
def test_encoding_on_cuda_keeps_cudas_rules(
    tiny_mlm_dir: Path, cuda_rules: CudaRules, monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", precision=precision)
    exact = model.exact_vectors(model.input_module.tokenize(SENTENCES).ids)  # outside the rules
    monkeypatch.setattr(SparseEncoder, "device", property(lambda self: torch.device("cpu")))
    cuda_rules.on_device(model)
    vectors = model.exact_vectors(model.input_module.tokenize(SENTENCES).ids)  # what CUDA runs
    assert cuda_rules.checked > 0 and vectors.dtype == torch.float32
    torch.testing.assert_close(vectors, exact, rtol=0, atol=0)


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_a_training_step_under_autocast_keeps_cudas_rules(
    tiny_mlm_dir: Path, cuda_rules: CudaRules, precision: str
) -> None:
    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", precision="float32")
    model.train()
    cuda_rules.on_device(model)
    # CUDA's autocast runs layer_norm in float32 (its float32 list); the CPU's autocast does not,
    # so that one rule of CUDA's policy is applied by hand, and everything else is the CPU's autocast.
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.register_forward_pre_hook(lambda _, args: (args[0].float(), *args[1:]))
    loss = SpladeLoss(model, SparseMultipleNegativesRankingLoss(model), 3e-5, 5e-5)
    triplets = [
        Triplet(q, d, n) for q, d, n in zip(SENTENCES, SENTENCES[1:] + SENTENCES[:1], SENTENCES[::-1])
    ]
    with torch.autocast("cpu", dtype=getattr(torch, precision)):  # as the trainer's on CUDA
        value = loss(triplets)
    value.backward()
    assert cuda_rules.checked > 0 and torch.isfinite(value)
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
