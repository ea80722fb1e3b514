"""The sparse encoder and the cross-encoder on a real GPU (issue 52): each runs the GPU pipeline
at its plan's precision (``auto``: float16 on tensor cores) and gives sentence-transformers' float32
vectors or logits within the bounds the CPU tests hold under CUDA's rules
(tests/sparse/test_sparse_cuda_rules.py, tests/cross_encoder/test_cross_encoder_cuda_rules.py).

Every test needs a CUDA GPU and skips, saying so, where there is none.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tests.conftest import gpu_sentences
from tests.cross_encoder.test_cross_encoder_cuda_rules import LOGIT_BOUND
from tests.sparse.conftest import build_tiny_mlm, save_st_splade
from tests.sparse.test_sparse_cuda_rules import SPARSE_GPU_BOUND

from sbert import CrossEncoder, SparseEncoder
from sbert.inference.cuda.pipeline import CudaPipeline

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none"
)
DTYPES = {"auto": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


@pytest.mark.parametrize("precision", list(DTYPES))
@pytest.mark.parametrize("strategy", ["max", "sum"])
def test_sparse_on_the_gpu_pipeline(tmp_path: Path, precision: str, strategy: str) -> None:
    from sentence_transformers import SparseEncoder as STSparseEncoder

    path = save_st_splade(build_tiny_mlm(tmp_path / "mlm"), tmp_path / "splade", strategy)
    texts = gpu_sentences(300, seed=6)
    oracle = STSparseEncoder(str(path), device="cuda").encode(texts, convert_to_sparse_tensor=False)
    model = SparseEncoder.from_pretrained(path, device="cuda", precision=precision)
    assert model.plan.precision == str(DTYPES[precision])[6:] and model.plan.device.startswith("cuda")
    got = model.encode(texts, batch_size=64, convert_to_sparse_tensor=False)
    planning = model.planning
    _, runner = planning.runner(model.plan, pack=True)
    assert isinstance(runner, CudaPipeline) and runner.bert is not None
    distance = float((1 - torch.nn.functional.cosine_similarity(got, oracle.cpu(), dim=1)).max())
    assert distance <= SPARSE_GPU_BOUND[DTYPES[precision]], distance


@pytest.mark.parametrize("precision", list(DTYPES))
def test_the_cross_encoder_on_the_gpu_pipeline(tiny_model_dir: Path, tmp_path: Path, precision: str) -> None:
    from sentence_transformers import CrossEncoder as STCrossEncoder

    torch.manual_seed(0)
    CrossEncoder.from_pretrained(tiny_model_dir, num_labels=3, device="cpu").save(tmp_path / "ce")
    texts = gpu_sentences(400, seed=7, longest=20)
    pairs = list(zip(texts[:200], texts[200:]))
    oracle = STCrossEncoder(str(tmp_path / "ce"), device="cuda").predict(
        pairs, activation_fn=torch.nn.Identity(), convert_to_tensor=True
    )
    model = CrossEncoder.from_pretrained(tmp_path / "ce", device="cuda", precision=precision)
    got = model.logits(pairs)
    _, runner = model.planning.runner(model.plan, pack=False)
    assert isinstance(runner, CudaPipeline) and runner.bert is not None
    worst = float((got - oracle.cpu()).abs().max() / oracle.abs().max())
    assert worst <= LOGIT_BOUND[DTYPES[precision]], worst
