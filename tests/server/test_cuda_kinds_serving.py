"""``sbert serve`` on CUDA for the other kinds, run on the CPU under CUDA's rules (tests/cuda_rules.py)
in float16 (``auto`` on an H100), bfloat16 and float32: a ``--cross-encoder``'s merged /rerank
pairs and a sparse model's merged /embed_sparse texts go through the GPU pipeline's unpadded path
within ``--max-batch-tokens``, cut in arrival order as TEI's queue cuts them, with no dtype CUDA
refuses and one wait for the device per batch answered; the scores and vectors are the model's own
``predict``/``encode`` under the same rules.

As in tests/server/test_cuda_serving.py, the plans are made for cuda:0 while the weights stay on
the CPU, watched by the rules; the batcher is stepped on the test's thread (the one the rules
watch), while the token pool's threads tokenize the requests as they arrive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tests.conftest import gpu_sentences
from tests.cuda_rules import CudaRules, plan_as_on_cuda
from tests.server.test_cuda_serving import PRECISIONS, passes  # noqa: F401  # passes: a fixture
from tests.server.test_embed_sparse import build_tiny_splade

from sbert import SentenceEncoder, SparseEncoder
from sbert.cross_encoder import CrossEncoder
from sbert.inference.cuda.pipeline import CudaPipeline
from sbert.server.batcher import BatchStats, TokenBudget
from sbert.server.pair_jobs import rerank
from sbert.server.run import build_service
from sbert.server.settings import BatchSettings, ServeOptions
from sbert.server.sparse_served import served

BUDGET = 48  # --max-batch-tokens: several batches, and passes, from one take
# Worst difference to the model's own predict/encode under the same rules, relative to the largest
# value, by the dtype the pipeline computes in (the batches differ: merged requests, not one call).
BOUND = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 3e-2}


@pytest.fixture(scope="module")
def reranker_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved one-output cross-encoder on the tiny random BERT (its head seeded)."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("reranker") / "ce"
    CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu").save(folder)
    return folder


@pytest.fixture(scope="module")
def splade_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_splade(tmp_path_factory.mktemp("tiny-splade"))


def _requests(seed: int) -> list[list[str]]:
    """Ten requests of one to four short sentences, and one over the budget alone."""
    sizes = [1, 3, 2, 1, 4, 1, 2, 1, 1, 3]
    return [gpu_sentences(n, seed + i, longest=8) for i, n in enumerate(sizes)] + [
        gpu_sentences(6, seed + 99, longest=12)
    ]


def _relative(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-12))


def _check_passes(
    seen: list[tuple[str, int]], stats: list[BatchStats], counts: list[list[int]], rules: CudaRules
) -> None:
    """TEI's batches in arrival order; every pass unpadded within the budget; one sync per batch."""
    runs = TokenBudget(BUDGET).groups(counts)
    assert len(runs) > 2
    assert [(s.requests, s.tokens) for s in stats] == [
        (len(run), sum(sum(counts[i]) for i in run)) for run in runs
    ]
    assert seen and all(kind == "unpadded" and 0 < tokens <= BUDGET for kind, tokens in seen), seen
    assert rules.checked > 0  # the dtype rules ran over the forward passes
    assert len(rules.syncs) == len(runs), "\n".join(map(str, rules.syncs))


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_merged_rerank_on_cuda_runs_the_unpadded_pipeline_within_the_budget(
    tiny_model_dir: Path,
    reranker_dir: Path,
    passes: list[tuple[str, int]],  # noqa: F811
    cuda_rules: CudaRules,
    monkeypatch: pytest.MonkeyPatch,
    precision: str,
) -> None:
    cuda = plan_as_on_cuda(monkeypatch)
    loaded: list[Any] = []
    load = CrossEncoder.from_pretrained.__func__  # type: ignore[attr-defined]

    def spy(cls: type, folder: Any, device: Any = None, **options: Any) -> CrossEncoder:
        loaded.append(device)  # the weights stay on the CPU, at the precision under test
        return load(cls, folder, device="cpu", precision=precision)  # type: ignore[no-any-return]

    monkeypatch.setattr(CrossEncoder, "from_pretrained", classmethod(spy))
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision=precision)
    batching = BatchSettings(max_batch_tokens=BUDGET)
    service = build_service(model, ServeOptions(batching=batching, cross_encoder=str(reranker_dir)))
    reranker = service.cross_encoder
    assert loaded == [model.device]  # `sbert serve` loads it on the served model's device
    monkeypatch.setattr(CrossEncoder, "device", property(lambda self: cuda))  # scored as on cuda:0
    dtype = PRECISIONS[precision]
    assert (reranker.plan.device, reranker.plan.precision) == ("cuda:0", str(dtype)[6:])
    assert isinstance(reranker.planning.runner(reranker.plan, pack=True)[1], CudaPipeline)
    batcher = service.batcher
    stats: list[BatchStats] = []
    batcher.on_batch = stats.append
    cuda_rules.on_device(reranker)
    rerank(batcher, reranker, "warm", ["up"])
    assert batcher.step()  # builds the pipeline and converts the weights
    cuda_rules.reset()
    passes.clear()
    stats.clear()
    requests = _requests(seed=3)
    futures = [rerank(batcher, reranker, texts[0], texts) for texts in requests]
    assert batcher.step()  # one take: every request, cut into TEI's batches
    whole = [reranker.tokenizer([t[0]] * len(t), t, verbose=False)["input_ids"] for t in requests]
    _check_passes(passes, stats, [[len(row) for row in rows] for rows in whole], cuda_rules)
    for texts, future in zip(requests, futures):
        with cuda_rules.paused():
            expected = reranker.predict([(texts[0], text) for text in texts])
        assert _relative(future.result(0), expected) <= BOUND[dtype]


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_merged_embed_sparse_on_cuda_runs_the_unpadded_pipeline_within_the_budget(
    splade_dir: Path,
    passes: list[tuple[str, int]],  # noqa: F811
    cuda_rules: CudaRules,
    monkeypatch: pytest.MonkeyPatch,
    precision: str,
) -> None:
    plan_as_on_cuda(monkeypatch)
    encoder = SparseEncoder.from_pretrained(splade_dir, device="cpu", precision=precision)
    model = served(encoder)
    service = build_service(model, ServeOptions(batching=BatchSettings(max_batch_tokens=BUDGET)))
    dtype = PRECISIONS[precision]
    assert (encoder.plan.device, encoder.plan.precision) == ("cuda:0", str(dtype)[6:])
    assert isinstance(encoder.planning.runner(encoder.plan, pack=True)[1], CudaPipeline)
    batcher = service.batcher
    assert batcher.token_budget == TokenBudget(BUDGET) and batcher.tokens is not None
    stats: list[BatchStats] = []
    batcher.on_batch = stats.append
    cuda_rules.on_device(encoder)
    batcher.embed(["warm up"])
    assert batcher.step()
    cuda_rules.reset()
    passes.clear()
    stats.clear()
    requests = _requests(seed=7)
    futures = [batcher.embed(texts) for texts in requests]
    assert batcher.step()
    counts = [[len(row) for row in encoder.input_module.whole_token_ids(texts)] for texts in requests]
    _check_passes(passes, stats, counts, cuda_rules)
    for texts, future in zip(requests, futures):
        with cuda_rules.paused():
            expected = encoder.encode(texts, convert_to_sparse_tensor=False).numpy()
        assert _relative(future.result(0).vectors.toarray(), expected) <= BOUND[dtype]
