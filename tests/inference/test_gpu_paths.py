"""Every GPU path, run on the CPU in float32, bfloat16 and float16 under CUDA's rules (tests/cuda_rules.py):
FastBert, UnpaddedBert, the pipeline (sentences, token budgets, CUDA-graph buckets, padded models,
texts through the tokenizing threads), the runner the plan picks on CUDA and encode() through it.
Each against sentence-transformers' float32 vectors, within the dtype's bound, and with no host sync
per batch. Issue 43: the GPU code had only ever run on the CPU in float32, where a float32
LayerNorm weight on fp16 activations passes; CUDA refused it at first contact.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from tests.conftest import GPU_BOUND, GPU_DTYPES, gpu_sentences
from tests.cuda_rules import CudaRules
from tests.inference.test_cuda_precision import simulate_gpu

from sbert import SentenceEncoder
from sbert.inference import runners as runners_module
from sbert.inference.cuda.pipeline import CudaPipeline, PipelineOptions, RunOptions
from sbert.inference.cuda.unpadded import UnpaddedBert, unpadded_batch
from sbert.inference.fast_bert import FastBert
from sbert.inference.plan import PlanRequest, make_plan

DTYPE_IDS = ["float32", "bfloat16", "float16"]


def _sentences(count: int, seed: int = 0) -> list[str]:
    return gpu_sentences(count, seed, longest=39)


def _worst_distance(got: np.ndarray | torch.Tensor, expected: np.ndarray | torch.Tensor) -> float:
    a, b = torch.as_tensor(np.asarray(got)), torch.as_tensor(np.asarray(expected))
    return float((1 - F.cosine_similarity(a.float(), b.float(), dim=-1)).max())


def _encoder(path: Path) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(path, device="cpu", precision="float32", backend="torch")


@pytest.fixture(scope="module")
def expected(tiny_model_dir: Path) -> np.ndarray:
    return SentenceTransformer(str(tiny_model_dir), device="cpu").encode(_sentences(60), batch_size=64)


@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=DTYPE_IDS)
def test_fast_bert_under_cuda_rules(
    tiny_encoder: SentenceEncoder, cuda_rules: CudaRules, dtype: torch.dtype
) -> None:
    features = tiny_encoder.transformer.collate(tiny_encoder.token_ids(_sentences(6)).ids)
    with torch.inference_mode():
        exact = tiny_encoder.transformer(features)  # (batch, seq, hidden)
        tokens = FastBert(tiny_encoder.transformer.model, dtype)(
            features["input_ids"], features["attention_mask"]
        )
    real = features["attention_mask"].bool()
    assert tokens.dtype == torch.float32 and cuda_rules.checked > 0
    assert _worst_distance(tokens[real], exact[real]) <= GPU_BOUND[dtype]


@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=DTYPE_IDS)
def test_unpadded_bert_under_cuda_rules(
    tiny_encoder: SentenceEncoder, cuda_rules: CudaRules, dtype: torch.dtype
) -> None:
    ids = tiny_encoder.token_ids(_sentences(6)).ids
    features = tiny_encoder.transformer.collate(ids)
    with torch.inference_mode():
        exact = tiny_encoder.transformer(features)[features["attention_mask"].bool()]  # (total, hidden)
        tokens = UnpaddedBert(tiny_encoder.transformer.model, dtype)(unpadded_batch(ids))
    assert _worst_distance(tokens, exact) <= GPU_BOUND[dtype]


PIPELINES = {
    "sentences": (PipelineOptions(), {"batch_size": 7}),
    "token-budget": (PipelineOptions(max_batch_tokens=90), {}),
    "graph-buckets": (PipelineOptions(graphs=True), {"batch_size": 5}),
    "budget-and-buckets": (PipelineOptions(max_batch_tokens=400, graphs=True), {"max_tokens": 60}),
}


@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", list(PIPELINES))
def test_the_pipeline_under_cuda_rules_gives_sentence_transformers_vectors_without_a_sync_per_batch(
    tiny_model_dir: Path, expected: np.ndarray, cuda_rules: CudaRules, name: str, dtype: torch.dtype
) -> None:
    options, run = PIPELINES[name]
    model = _encoder(tiny_model_dir)
    cuda_rules.on_device(model)  # the weights live on the device
    pipeline = CudaPipeline(model.transformer, model.pooling, model.after_pooling, dtype, options)
    ids = model.token_ids(_sentences(60)).ids
    batches = pipeline.batches([len(row) for row in ids], RunOptions(**run))
    assert len(batches) > 3
    cuda_rules.reset()  # building converts weights once; a call must not wait for the device per batch
    got = pipeline.run(ids, RunOptions(**run), lambda done: None)
    assert [sync.what for sync in cuda_rules.syncs] == ["a copy to the host"], (
        cuda_rules.syncs
    )  # the one, at the end
    assert _worst_distance(got, expected) <= GPU_BOUND[dtype]
    if dtype == torch.float32:
        np.testing.assert_allclose(got.numpy(), expected, atol=1e-5)


@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=DTYPE_IDS)
def test_a_model_it_cannot_unpad_runs_padded_under_autocast_and_cuda_rules(
    tiny_model_dir: Path, tmp_path: Path, cuda_rules: CudaRules, dtype: torch.dtype
) -> None:
    relu = shutil.copytree(tiny_model_dir, tmp_path / "relu")
    config = json.loads((relu / "config.json").read_text())
    (relu / "config.json").write_text(json.dumps(config | {"hidden_act": "relu"}))
    sentences = _sentences(30, seed=2)
    with cuda_rules.paused():
        reference = SentenceTransformer(str(relu), device="cpu").encode(sentences)
    model = _encoder(relu)
    cuda_rules.on_device(model)
    pipeline = CudaPipeline(
        model.transformer, model.pooling, model.after_pooling, dtype, PipelineOptions(max_batch_tokens=80)
    )
    assert pipeline.bert is None
    got = pipeline.run(model.token_ids(sentences).ids, RunOptions(), lambda done: None)
    # transformers' own mask preparation waits for the device each batch (sdpa_mask's
    # ``padding_mask.all()``); sbert's code adds none but the final copy.
    ours = [sync for sync in cuda_rules.syncs if not sync.inside.startswith("transformers/")]
    assert [sync.what for sync in ours] == ["a copy to the host"], ours
    assert len(cuda_rules.syncs) > len(
        pipeline.batches([len(r) for r in model.token_ids(sentences).ids], RunOptions())
    )
    assert _worst_distance(got, reference) <= GPU_BOUND[dtype] * 10  # autocast rounds activations too


@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=DTYPE_IDS)
def test_texts_through_the_tokenizing_threads_under_cuda_rules(
    tiny_model_dir: Path, cuda_rules: CudaRules, dtype: torch.dtype
) -> None:
    sentences = _sentences(150, seed=3)
    with cuda_rules.paused():
        reference = SentenceTransformer(str(tiny_model_dir), device="cpu").encode(sentences)
    model = _encoder(tiny_model_dir)
    cuda_rules.on_device(model)
    options = PipelineOptions(max_batch_tokens=120, tokenize_threads=2)
    pipeline = CudaPipeline(model.transformer, model.pooling, model.after_pooling, dtype, options)
    got = pipeline.run_texts(
        sentences, lambda texts: model.token_ids(texts).ids, RunOptions(), lambda done: None, chunk=40
    )
    assert cuda_rules.syncs == [] and len(cuda_rules.downloads) == 4  # a non-blocking copy per chunk
    assert _worst_distance(got, reference) <= GPU_BOUND[dtype]


PRECISIONS = {"auto": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_encode_through_the_runner_the_plan_picks_on_cuda_under_cuda_rules(
    tiny_model_dir: Path,
    expected: np.ndarray,
    cuda_rules: CudaRules,
    monkeypatch: pytest.MonkeyPatch,
    precision: str,
) -> None:
    # The plan made for a CUDA device (an H100, simulated), the runner select() builds for it, and
    # encode() through it: everything but the device itself.
    simulate_gpu(monkeypatch, "NVIDIA H100 80GB HBM3", (9, 0))
    cuda = torch.device("cuda:0")
    monkeypatch.setattr(
        "sbert.inference.planning.make_plan", lambda request, cpu, device: make_plan(request, cpu, cuda)
    )
    monkeypatch.setattr(runners_module, "on_cuda", lambda module: True)
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision=precision)
    assert model.plan.precision == str(PRECISIONS[precision]).removeprefix("torch.")
    plan = make_plan(PlanRequest.of(precision, "auto"), model.cpu_capabilities, cuda)
    runner = model.runners.select(plan, model.name)
    assert isinstance(runner, CudaPipeline) and runner.dtype == PRECISIONS[precision]
    cuda_rules.on_device(model)
    model.encode(_sentences(60), show_progress_bar=False)  # the pipeline built, weights converted
    cuda_rules.reset()
    for _ in range(2):
        got = model.encode(_sentences(60), show_progress_bar=False)
        assert model.runners.select(plan, model.name) is runner  # kept: the weights did not change
    assert len(cuda_rules.syncs) == 2, cuda_rules.syncs  # one per call: the vectors' copy to the host
    assert _worst_distance(got, expected) <= GPU_BOUND[PRECISIONS[precision]]
