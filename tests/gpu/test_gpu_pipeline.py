"""The GPU pipeline on a real GPU: unpadded attention (variable-length kernels), CUDA graphs, no
host sync per batch, and float16 ``auto`` within its documented bound.

Every test needs a CUDA GPU and skips, saying so, where there is none. On a GPU machine:
``python -m pytest tests/gpu -q``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.inference.cuda.pipeline import CudaPipeline, PipelineOptions, RunOptions
from sbert.inference.cuda.unpadded import UnpaddedBert, unpadded_batch

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none"
)

SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays an instrument on a stage, and the crowd sings along with every chorus.",
    "The cat sleeps.",
    "Stock markets fell sharply on Monday after the announcement.",
]
FLOAT16_COSINE_BOUND = 1e-4  # docs/guides/gpu.md: 2e-6 measured for all-MiniLM-L6-v2 on STSb


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    cosine = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float((1 - cosine).max())


def _pipeline(model: SentenceEncoder, dtype: torch.dtype, **options: object) -> CudaPipeline:
    return CudaPipeline(
        model.transformer,
        model.pooling,
        model.after_pooling,
        dtype,
        PipelineOptions(**options),  # type: ignore[arg-type]
    )


def test_float32_pipeline_gives_the_cpu_vectors_with_and_without_graphs(tiny_model_dir: Path) -> None:
    cpu = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32", backend="torch")
    gpu = SentenceEncoder.from_pretrained(tiny_model_dir, device="cuda", precision="float32")
    expected = cpu.encode(SENTENCES * 10)
    ids = gpu.token_ids(SENTENCES * 10).ids
    for graphs in (True, False):
        got = _pipeline(gpu, torch.float32, graphs=graphs).run(ids, RunOptions(), lambda done: None)
        np.testing.assert_allclose(got.numpy(), expected, atol=1e-4)
    one = _pipeline(gpu, torch.float32, graphs=True)
    np.testing.assert_allclose(
        one.run(ids[:1], RunOptions(), lambda done: None).numpy(), expected[:1], atol=1e-4
    )
    assert one.graphs is not None and one.graphs.enabled and one.graphs.graphs  # captured, not fallen back


def test_encode_on_cuda_tokenizes_on_several_threads_and_gives_the_cpu_vectors(tiny_model_dir: Path) -> None:
    cpu = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32", backend="torch")
    gpu = SentenceEncoder.from_pretrained(tiny_model_dir, device="cuda", precision="float32")
    texts = [f"{SENTENCES[i % 4]} {i}" for i in range(9000)]  # three chunks of the threads' tokenizing
    np.testing.assert_allclose(gpu.encode(texts), cpu.encode(texts), atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_variable_length_attention_matches_padded_blocks(tiny_model_dir: Path, dtype: torch.dtype) -> None:
    gpu = SentenceEncoder.from_pretrained(tiny_model_dir, device="cuda", precision="float32")
    batch = unpadded_batch(gpu.token_ids(SENTENCES).ids).to(torch.device("cuda"))
    varlen = UnpaddedBert(gpu.transformer.model, dtype)
    blocks = UnpaddedBert(gpu.transformer.model, dtype)
    blocks.varlen = None
    with torch.inference_mode():
        a, b = varlen(batch), blocks(batch)
    assert varlen.varlen is not None, "variable-length attention fell back (see the warning)"
    assert torch.nn.functional.cosine_similarity(a, b, dim=-1).min() > 0.999


def test_no_host_sync_per_batch(tiny_model_dir: Path) -> None:
    gpu = SentenceEncoder.from_pretrained(tiny_model_dir, device="cuda", precision="float32")
    pipeline = _pipeline(gpu, torch.float16, max_batch_tokens=64, graphs=False)
    ids = gpu.token_ids(SENTENCES * 50).ids
    pipeline.run(ids[:8], RunOptions(), lambda done: None)  # kernels chosen, memory allocated
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pipeline.run(ids, RunOptions(), lambda done: None)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    syncs = [str(w.message) for w in caught if "synchroniz" in str(w.message)]
    assert len(syncs) <= 2, syncs  # the final copy to the host, not one per batch (there are many)


@pytest.mark.integration
def test_auto_float16_stays_within_the_documented_bound() -> None:
    reference = SentenceEncoder.from_pretrained(device="cpu", precision="float32", backend="torch")
    gpu = SentenceEncoder.from_pretrained(device="cuda")
    assert gpu.plan.precision == "float16", gpu.plan.reason
    assert _cosine_distance(reference.encode(SENTENCES), gpu.encode(SENTENCES)) <= FLOAT16_COSINE_BOUND


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_a_store_across_every_gpu_equals_one_gpu(tiny_model_dir: Path, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    from sbert.store import encode_corpus

    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cuda")
    texts = [f"{SENTENCES[i % 4]} {i}" for i in range(400)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    options = {"shard_size": 100, "chunk_rows": 50, "show_progress": False}
    ray.init(num_gpus=torch.cuda.device_count(), include_dashboard=False, log_to_driver=False)
    try:
        spread = encode_corpus(model, source, tmp_path / "ray", engine="ray", **options)
    finally:
        ray.shutdown()
    rows = np.arange(len(texts))
    expected = model.encode(texts)
    assert _cosine_distance(spread.vectors(rows), expected) <= 1e-5  # float16 both: batches differ
