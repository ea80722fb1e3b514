"""The cross-encoder on CUDA runs the GPU pipeline (unpadded attention, token budgets), not the whole
transformers model in float32: run on the CPU under CUDA's rules (tests/cuda_rules.py) in fp32, bf16
and fp16, its logits are sentence-transformers' CrossEncoder float32 logits within the dtype's
bound, with no mixed dtype CUDA refuses and no host sync but the scores' copy; the last layer runs
for each pair's ``[CLS]`` alone, on unpadded batches and on the CUDA graphs' buckets alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from sentence_transformers import CrossEncoder as STCrossEncoder
from tests.conftest import gpu_sentences
from tests.cuda_rules import CudaRules, plan_as_on_cuda

from sbert import CrossEncoder
from sbert.inference.cuda.pipeline import CudaPipeline, PipelineOptions
from sbert.inference.runner import RunOptions

PRECISIONS = {"auto": torch.float16, "float32": torch.float32, "bfloat16": torch.bfloat16}
# Worst logit difference to sentence-transformers' float32, relative to the largest logit, on the
# tiny random BERT classifier, by the dtype the GPU path computes in.
LOGIT_BOUND = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 3e-2}


def _on_simulated_cuda(
    folder: Path,
    pairs: list[tuple[str, str]],
    cuda_rules: CudaRules,
    monkeypatch: pytest.MonkeyPatch,
    precision: str,
) -> tuple[CrossEncoder, torch.Tensor]:
    """The cross-encoder in ``folder`` planned and run as on CUDA (its weights on the CPU, watched by
    the rules), and sentence-transformers' float32 logits of ``pairs``."""
    with cuda_rules.paused():
        oracle = STCrossEncoder(str(folder), device="cpu").predict(
            pairs, activation_fn=torch.nn.Identity(), convert_to_tensor=True
        )
    plan_as_on_cuda(monkeypatch)
    model = CrossEncoder.from_pretrained(folder, device="cpu", precision=precision)
    # The model says it is on CUDA: scoring must take the plan's runner, not the whole
    # transformers model on that device.
    monkeypatch.setattr(CrossEncoder, "device", property(lambda self: torch.device("cuda:0")))
    assert (model.plan.precision, model.plan.device) == (str(PRECISIONS[precision])[6:], "cuda:0")
    return model, oracle.cpu()


def _check(got: torch.Tensor, oracle: torch.Tensor, cuda_rules: CudaRules, precision: str) -> None:
    """Ops were watched, the one sync is the scores' copy, the logits within the dtype's bound."""
    assert cuda_rules.checked > 0
    assert [sync.what for sync in cuda_rules.syncs] == ["a copy to the host"], cuda_rules.syncs
    worst = float((got - oracle).abs().max() / oracle.abs().max())
    assert worst <= LOGIT_BOUND[PRECISIONS[precision]], worst


@pytest.mark.parametrize("graphs", [False, True], ids=["unpadded", "graph-buckets"])
@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_scoring_on_cuda_runs_the_unpadded_pipeline_under_cudas_rules(
    saved_cross_encoder: Path,
    cuda_rules: CudaRules,
    monkeypatch: pytest.MonkeyPatch,
    first_token_layers: list[int],
    precision: str,
    graphs: bool,
) -> None:
    texts = gpu_sentences(60, seed=5, longest=20)
    pairs = list(zip(texts[:30], texts[30:]))
    model, oracle = _on_simulated_cuda(saved_cross_encoder, pairs, cuda_rules, monkeypatch, precision)
    # Several batches a call; with graphs, each fits a bucket (on the CPU: its shapes, no graph).
    model.runners.pipeline_options = PipelineOptions(max_batch_tokens=120, graphs=graphs)
    _, runner = model.planning.runner(model.plan, pack=False)
    assert isinstance(runner, CudaPipeline) and runner.bert is not None
    assert runner.dtype == PRECISIONS[precision]
    cuda_rules.on_device(model)
    model.logits(pairs[:2])  # builds the pipeline and converts the weights
    cuda_rules.reset()
    first_token_layers.clear()
    got = model.logits(pairs, batch_size=8)
    assert len(first_token_layers) == len(runner.batches(model.tokenize(pairs).lengths, RunOptions()))
    _check(got, oracle, cuda_rules, precision)


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_a_bert_the_pipeline_cannot_unpad_runs_its_first_token_body_padded_under_cudas_rules(
    saved_cross_encoder: Path,
    tmp_path: Path,
    cuda_rules: CudaRules,
    monkeypatch: pytest.MonkeyPatch,
    precision: str,
) -> None:
    """A BERT classifier FastBert does not reproduce (another activation) runs on the pipeline's
    padded batches under autocast: the pair body's first-token forward, within the dtype's bound."""
    folder = tmp_path / "gelu-new"
    shutil.copytree(saved_cross_encoder, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_act": "gelu_new"}))
    texts = gpu_sentences(24, seed=6, longest=16)
    pairs = list(zip(texts[:12], texts[12:]))
    model, oracle = _on_simulated_cuda(folder, pairs, cuda_rules, monkeypatch, precision)
    _, runner = model.planning.runner(model.plan, pack=False)
    assert isinstance(runner, CudaPipeline) and runner.bert is None  # padded batches
    cuda_rules.on_device(model)
    model.logits(pairs[:2])
    cuda_rules.reset()
    _check(model.logits(pairs, batch_size=4), oracle, cuda_rules, precision)
