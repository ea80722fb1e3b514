"""The engine plan on each of the three CPU classes, simulated on any machine: what runs, on which
backend, and the one warning that says why where it is not what was asked for; and a model reports
exactly what its encode() runs, even when the capabilities change between calls."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.inference import precision as precision_module
from sbert.inference.cpu import AVX2_ONLY, BF16_AND_VNNI, CPU_CLASSES, VNNI_NO_BF16, CpuCapabilities
from sbert.inference.plan import ANY_PRECISION, Failure, PlanRequest, make_plan
from sbert.inference.precision import ComputeBackend

CPU = torch.device("cpu")
NO_BF16 = "needs native bf16"
NO_VNNI = "needs int8 dot-product instructions"
NOT_TORCH = "runs only on the openvino backend, not on torch"

# (class, asked precision, asked backend) -> (precision that runs, backend, why it differs)
EXPECTED = {
    ("avx2", "auto", "auto"): ("float32", "openvino", None),
    ("avx2", "float32", "torch"): ("float32", "torch", None),
    ("avx2", "bfloat16", "auto"): ("float32", "openvino", NO_BF16),
    ("avx2", "mixed", "auto"): ("float32", "openvino", NO_VNNI),
    ("avx2", "int8", "auto"): ("float32", "openvino", NO_VNNI),
    ("avx2", "int8", "torch"): ("float32", "torch", NOT_TORCH),
    ("vnni", "auto", "auto"): ("float32", "openvino", None),
    ("vnni", "bfloat16", "torch"): ("float32", "torch", NO_BF16),
    ("vnni", "mixed", "auto"): ("mixed", "openvino", None),
    ("vnni", "int8", "openvino"): ("int8", "openvino", None),
    ("vnni", "mixed", "torch"): ("float32", "torch", NOT_TORCH),
    ("bf16", "auto", "auto"): ("bfloat16", "openvino", None),
    ("bf16", "auto", "torch"): ("bfloat16", "torch", None),
    ("bf16", "bfloat16", "auto"): ("bfloat16", "openvino", None),
    ("bf16", "mixed", "auto"): ("mixed", "openvino", None),
    ("bf16", "int8", "auto"): ("int8", "openvino", None),
    ("bf16", "mixed", "torch"): ("bfloat16", "torch", NOT_TORCH),
}


@pytest.fixture(autouse=True)
def openvino_and_fresh_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan with the openvino extra installed; each test sees its own once-per-process notices."""
    monkeypatch.setattr(precision_module, "openvino_installed", lambda with_nncf=False: True)
    monkeypatch.setattr(precision_module, "_warned", set())


@pytest.mark.parametrize(("cpu", "precision", "backend"), list(EXPECTED))
def test_the_plan_on_each_cpu_class(
    tiny_model_dir: Path, caplog: pytest.LogCaptureFixture, cpu: str, precision: str, backend: str
) -> None:
    runs, engine, why = EXPECTED[cpu, precision, backend]
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision=precision, backend=backend
    )
    model.cpu_capabilities = CPU_CLASSES[cpu]
    with caplog.at_level(logging.WARNING, logger="sbert"):
        plan = model.plan
        assert model.plan is plan  # resolved once, then read
    assert (plan.precision, plan.backend, model.precision, model.backend) == (runs, engine, runs, engine)
    assert model.packs == (engine == "openvino" and runs in ("float32", "bfloat16"))  # a BERT packs
    if why is None:
        assert plan.fallbacks == () and caplog.text == ""
    else:
        assert len(plan.fallbacks) == 1 and why in plan.fallbacks[0] and f"so {runs} is used" in caplog.text
        assert len(caplog.records) == 1
    assert plan.to_dict()["cpu"] == CPU_CLASSES[cpu].name


def test_the_three_classes_are_read_from_cpu_flags(tmp_path: Path) -> None:
    flags = {
        "avx2": "fpu sse avx2 fma",
        "vnni": "fpu sse avx2 avx512f avx512_vnni",
        "bf16": "fpu sse avx2 avx512f avx512_vnni avx512_bf16",
    }
    for name, line in flags.items():
        (tmp_path / name).write_text(f"processor\t: 0\nflags\t\t: {line}\n", encoding="utf-8")
        assert CpuCapabilities.detect(tmp_path / name) == CPU_CLASSES[name]


def test_the_plan_is_made_without_a_model() -> None:
    plan = make_plan(PlanRequest.of("bfloat16", "torch"), VNNI_NO_BF16, CPU)
    assert (plan.precision, plan.backend, plan.packs) == ("float32", "torch", False)
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        make_plan(PlanRequest.of("fp8", "auto"), AVX2_ONLY, CPU)


@pytest.mark.parametrize(("cpu", "after_int8"), [(BF16_AND_VNNI, "bfloat16"), (VNNI_NO_BF16, "float32")])
def test_an_int8_graph_that_misses_its_probe_gives_way_to_openvino_not_pytorch(
    cpu: CpuCapabilities, after_int8: str, caplog: pytest.LogCaptureFixture
) -> None:
    missed = Failure(ComputeBackend.OPENVINO, "int8", "m: the int8 padded graph differs from PyTorch")
    with caplog.at_level(logging.WARNING, logger="sbert"):
        plan = make_plan(PlanRequest.of("int8", failures=(missed,)), cpu, CPU)
    assert (plan.backend, plan.precision) == ("openvino", after_int8)  # Xeon with AMX: bf16, 2.5x PyTorch
    assert plan.fallbacks == (f"{missed.reason}; OpenVINO {after_int8} runs it instead",)
    assert caplog.text == ""  # make_plan says nothing: the model says each fallback, once
    broken = Failure(ComputeBackend.OPENVINO, ANY_PRECISION, "OpenVINO could not compile m")
    plan = make_plan(PlanRequest.of("int8", failures=(missed, broken)), cpu, CPU)
    assert (plan.backend, plan.precision) == ("torch", after_int8)
    assert plan.fallbacks[-1] == "OpenVINO could not compile m; PyTorch runs it instead"
    asked = make_plan(PlanRequest.of("int8", "openvino", failures=(missed,)), cpu, CPU)
    assert (asked.backend, asked.precision) == ("openvino", "int8")  # by name: the failure is raised


def test_model_precision_is_what_encode_runs_when_the_probe_changes_between_calls(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sbert.inference import runners as encoder_module

    ran: list[str] = []
    real_engine = encoder_module.OpenVinoEngine

    def recording_engine(transformer, pooling, precision, *args, **kwargs):  # type: ignore[no-untyped-def]
        ran.append(precision)
        return real_engine(transformer, pooling, precision, *args, **kwargs)

    monkeypatch.setattr(encoder_module, "OpenVinoEngine", recording_engine)
    pytest.importorskip("openvino")
    sentences = ["a man plays the guitar", "rain", "the dog runs in the park"] * 4
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="int8", calibration_sentences=sentences
    )
    exact = model.encode(sentences, compute_precision="float32")
    for cpu in (AVX2_ONLY, VNNI_NO_BF16, AVX2_ONLY):
        model.cpu_capabilities = cpu
        reported = model.precision
        ran.clear()
        vectors = model.encode(sentences)
        assert ran in ([reported], [])  # compiled now, or the engine compiled for it before
        assert model.precision == reported == ("int8" if cpu.int8 else "float32")
        if reported == "float32":
            np.testing.assert_array_equal(vectors, exact)
        else:  # really quantized
            assert np.abs(vectors - exact).max() > 1e-4
    assert set(model.runners.openvino) == {"float32", "int8"}


def test_a_store_records_the_plan_that_ran(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from sbert.store import CorpusOptions, encode_corpus

    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="int8", backend="torch")
    model.cpu_capabilities = BF16_AND_VNNI
    store = encode_corpus(model, ["a dog", "a cat"], tmp_path / "s", CorpusOptions(show_progress=False))
    engine = store.manifest["engine"]
    assert store.manifest["precision"] == engine["precision"] == "float32"
    assert engine["backend"] == "torch" and NOT_TORCH in engine["fallbacks"][0]
