"""The sparse encoder's CUDA paths run on the CPU under CUDA's rules (tests/cuda_rules.py), in fp32,
bf16 and fp16: encoding (the GPU pipeline at the plan's precision, the fused head over real tokens)
and the training step (the trainer's autocast in bf16 or fp16), with no mixed dtypes CUDA refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from sentence_transformers import SparseEncoder as STSparseEncoder
from tests.conftest import gpu_sentences
from tests.cuda_rules import CudaRules, plan_as_on_cuda
from tests.sparse.conftest import save_st_splade

from sbert import SparseEncoder
from sbert.data import Triplet
from sbert.inference.cuda.pipeline import CudaPipeline, PipelineOptions
from sbert.inference.runner import RunOptions
from sbert.losses import SparseMultipleNegativesRankingLoss, SpladeLoss
from sbert.sparse.engine import fast_vectors

# Worst cosine distance of a vector to sentence-transformers' float32 one on the tiny random SPLADE
# model, by the dtype the GPU path computes in (the body's and the decoder's).
SPARSE_GPU_BOUND = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 5e-3}

SENTENCES = ["a man plays the guitar", "rain falls", "the stock market fell sharply today"]


PRECISIONS = {"auto": torch.float16, "float32": torch.float32, "bfloat16": torch.bfloat16}


@pytest.mark.parametrize("strategy", ["max", "sum"])
@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_encoding_on_cuda_runs_the_unpadded_pipeline_under_cudas_rules(
    tiny_mlm_dir: Path,
    tmp_path: Path,
    cuda_rules: CudaRules,
    monkeypatch: pytest.MonkeyPatch,
    precision: str,
    strategy: str,
) -> None:
    """On CUDA the body runs on the GPU pipeline (unpadded, token budgets) at the plan's precision
    and the fused head over its real tokens: sentence-transformers' float32 vectors within the
    dtype's bound, no mixed dtype CUDA refuses, and no host sync but the vectors' copy per call."""
    path = save_st_splade(tiny_mlm_dir, tmp_path / "model", strategy)
    texts = gpu_sentences(40, seed=4)
    with cuda_rules.paused():
        oracle = STSparseEncoder(str(path), device="cpu").encode(texts, convert_to_sparse_tensor=False)
    plan_as_on_cuda(monkeypatch)
    model = SparseEncoder.from_pretrained(path, device="cpu", precision=precision)
    dtype = PRECISIONS[precision]
    assert (model.plan.precision, model.plan.backend, model.plan.device) == (
        str(dtype)[6:],
        "torch",
        "cuda:0",
    )
    planning = model.planning
    planning.runners.pipeline_options = PipelineOptions(max_batch_tokens=60)  # several batches a call
    _, runner = planning.runner(model.plan, pack=True)
    assert isinstance(runner, CudaPipeline) and runner.bert is not None and runner.dtype == dtype
    cuda_rules.on_device(model)
    model.encode(texts[:3])  # builds the pipeline and converts the weights
    cuda_rules.reset()
    fast_vectors(model, model.input_module.tokenize(texts).ids)  # what encode() runs per batch
    assert cuda_rules.checked > 0
    assert [sync.what for sync in cuda_rules.syncs] == ["a copy to the host"], cuda_rules.syncs
    got = model.encode(texts, batch_size=64, convert_to_sparse_tensor=False)
    distance = float((1 - torch.nn.functional.cosine_similarity(got, oracle.cpu(), dim=1)).max())
    assert distance <= SPARSE_GPU_BOUND[dtype], distance
    if dtype == torch.float32:  # sums of 30 tokens' weights reach 40: 1e-5 relative to them
        torch.testing.assert_close(got, oracle.cpu(), rtol=1e-6, atol=1e-5)
        assert torch.equal(got != 0, oracle.cpu() != 0)


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


def test_the_exact_path_in_a_servers_cuts_waits_for_the_device_once(
    tiny_mlm_dir: Path, tmp_path: Path, cuda_rules: CudaRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact float32 path run in several cuts (``sbert serve``'s merged batches of a model the
    engine does not serve; a prompt the pooling leaves out takes it too) keeps every cut's vectors
    on the device and copies them to the host once (not once a cut), giving the one-batch exact
    vectors."""
    path = save_st_splade(tiny_mlm_dir, tmp_path / "model", "max")
    plan_as_on_cuda(monkeypatch)
    model = SparseEncoder.from_pretrained(path, device="cpu", precision="float32")
    ids = model.input_module.tokenize(gpu_sentences(12, seed=8)).ids
    with cuda_rules.paused():
        expected = model.exact_vectors(ids, None, prompt_length=2)
    cuda_rules.on_device(model)
    cuda_rules.reset()
    got = model.encode_token_ids(ids, None, prompt_length=2, options=RunOptions(batch_size=4))
    assert cuda_rules.checked > 0
    copies = [sync for sync in cuda_rules.syncs if sync.what == "a copy to the host"]
    assert len(copies) == 1, cuda_rules.syncs
    # The exact path is transformers' own model, whose attention mask asks the host once a pass.
    assert all("transformers" in sync.inside for sync in cuda_rules.syncs if sync not in copies)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
