"""``auto`` on a CUDA device, simulated on the CPU: float16 with tensor cores, float32 without, and the
plan says why (tests/gpu checks a real GPU)."""

from __future__ import annotations

import pytest
import torch

from sbert.inference import precision as precision_module
from sbert.inference.cpu import AVX2_ONLY
from sbert.inference.plan import PlanRequest, make_plan

CUDA = torch.device("cuda:0")


def simulate_gpu(monkeypatch: pytest.MonkeyPatch, name: str, capability: tuple[int, int]) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: capability >= (8, 0))
    monkeypatch.setattr(precision_module, "_warned", set())


def test_auto_on_a_gpu_with_tensor_cores_is_float16_and_the_plan_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    simulate_gpu(monkeypatch, "NVIDIA H100 80GB HBM3", (9, 0))
    plan = make_plan(PlanRequest.of("auto", "auto"), AVX2_ONLY, CUDA)
    assert (plan.precision, plan.backend, plan.fallbacks) == ("float16", "torch", ())
    assert (
        plan.reason is not None and "NVIDIA H100 80GB HBM3 (compute capability 9.0) is float16" in plan.reason
    )
    assert plan.to_dict()["reason"] == plan.reason


def test_auto_on_a_gpu_without_tensor_cores_is_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    simulate_gpu(monkeypatch, "NVIDIA GeForce GTX 1080", (6, 1))
    plan = make_plan(PlanRequest.of("auto", "auto"), AVX2_ONLY, CUDA)
    assert plan.precision == "float32"
    assert plan.reason is not None and "no tensor cores" in plan.reason


def test_an_explicit_precision_on_cuda_is_kept_without_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    simulate_gpu(monkeypatch, "NVIDIA A100", (8, 0))
    assert make_plan(PlanRequest.of("bfloat16", "auto"), AVX2_ONLY, CUDA).precision == "bfloat16"
    plan = make_plan(PlanRequest.of("float32", "auto"), AVX2_ONLY, CUDA)
    assert (plan.precision, plan.reason) == ("float32", None)


def test_auto_on_the_cpu_is_unchanged() -> None:
    plan = make_plan(PlanRequest.of("auto", "torch"), AVX2_ONLY, torch.device("cpu"))
    assert (plan.precision, plan.reason) == ("float32", None)
