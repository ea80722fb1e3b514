import logging
from pathlib import Path

import pytest
import torch

from sbert.inference import precision as precision_module
from sbert.inference.cpu import CpuCapabilities
from sbert.inference.precision import (
    PRECISIONS,
    check_precision,
    cpu_has_native_bf16,
    cpu_has_native_int8,
    resolve_backend,
    resolve_precision,
    torch_precision,
)

CPU = torch.device("cpu")


def caps(bf16: bool, int8: bool = False) -> CpuCapabilities:
    return CpuCapabilities(bf16=bf16, int8=int8, name="simulated")


@pytest.fixture(autouse=True)
def fresh_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees its own once-per-process fallback notices."""
    monkeypatch.setattr(precision_module, "_warned", set())


def test_unknown_precision_lists_the_choices() -> None:
    with pytest.raises(
        ValueError, match="unknown precision 'fp8'; choose one of auto, float32, bfloat16, mixed, int8"
    ):
        check_precision("fp8")
    assert check_precision("BFloat16") == "bfloat16"
    assert PRECISIONS == ("auto", "float32", "bfloat16", "mixed", "int8")


@pytest.mark.parametrize(
    ("flags", "bf16", "int8"),
    [
        ("flags\t: fpu sse avx512f avx512_vnni avx512_bf16", True, True),
        ("flags\t: fpu sse avx512f amx_bf16 amx_tile", True, False),
        ("Features\t: fp asimd bf16 i8mm", True, False),
        ("flags\t: fpu sse avx2 avx512f avx512_vnni", False, True),
        ("flags\t: fpu sse avx2 avx_vnni", False, True),
        ("flags\t: fpu sse avx2 avx512f", False, False),
        ("processor\t: 0", False, False),
    ],
)
def test_native_bf16_and_int8_are_read_from_cpu_flags(
    tmp_path: Path, flags: str, bf16: bool, int8: bool
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\n{flags}\n", encoding="utf-8")
    assert cpu_has_native_bf16(cpuinfo) is bf16
    assert cpu_has_native_int8(cpuinfo) is int8


@pytest.mark.parametrize(
    ("bf16", "int8", "extra", "backend", "auto"),
    [
        (True, True, True, "auto", "bfloat16"),  # never calibrated: see test_auto_never_calibrates
        (True, True, True, "openvino", "bfloat16"),
        (True, True, True, "torch", "bfloat16"),
        (True, False, True, "auto", "bfloat16"),
        (True, True, False, "auto", "bfloat16"),
        (False, True, True, "auto", "float32"),
        (False, False, False, "auto", "float32"),
    ],
)
def test_auto_follows_the_hardware_extras_and_backend(
    monkeypatch: pytest.MonkeyPatch, bf16: bool, int8: bool, extra: bool, backend: str, auto: str
) -> None:
    monkeypatch.setattr(precision_module, "openvino_installed", lambda with_nncf=False: extra)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: bf16)
    cpu = caps(bf16, int8)
    assert resolve_precision("auto", CPU, backend, cpu) == auto
    assert resolve_precision("float32", CPU, backend, cpu) == "float32"
    # Issue 35: auto on a CUDA GPU with tensor cores is float16 whether or not it has bf16
    # (tests/inference/test_cuda_precision.py has the rest).
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "simulated")
    assert resolve_precision("auto", torch.device("cuda"), backend, cpu) == "float16"


@pytest.mark.parametrize(("bf16", "fallback"), [(True, "bfloat16"), (False, "float32")])
def test_mixed_without_int8_keeps_what_it_can(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, bf16: bool, fallback: str
) -> None:
    monkeypatch.setattr(precision_module, "openvino_installed", lambda with_nncf=False: False)
    cpu = caps(bf16, int8=True)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        assert resolve_precision("mixed", CPU, cpu=cpu) == fallback
        assert resolve_precision("mixed", CPU, cpu=cpu) == fallback
    notices = [r.getMessage() for r in caplog.records]
    assert len(notices) == 1 and f"so {fallback} is used instead" in notices[0]
    assert torch_precision("mixed", CPU, cpu) == fallback
    assert torch_precision("int8", CPU, cpu) == "float32"


def test_bf16_without_hardware_falls_back_with_one_notice(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="sbert"):
        assert resolve_precision("bfloat16", CPU, cpu=caps(False)) == "float32"
    notices = [r.getMessage() for r in caplog.records]
    assert len(notices) == 1 and "float32 is used instead" in notices[0]


@pytest.mark.parametrize(
    ("vnni", "extra", "notice"),
    [
        (False, True, "needs int8 dot-product instructions"),
        (True, False, 'needs the openvino extra (pip install "sbert[openvino]")'),
    ],
)
def test_int8_without_hardware_or_extra_falls_back_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, vnni: bool, extra: bool, notice: str
) -> None:
    monkeypatch.setattr(precision_module, "openvino_installed", lambda with_nncf=False: extra)
    cpu = caps(False, vnni)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        assert resolve_precision("int8", CPU, cpu=cpu) == "float32"
        assert resolve_precision("int8", CPU, cpu=cpu) == "float32"
    notices = [r.getMessage() for r in caplog.records]
    assert len(notices) == 1 and notice in notices[0] and "float32 is used instead" in notices[0]


def test_int8_where_it_can_run(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(precision_module, "openvino_installed", lambda with_nncf=False: True)
    cpu = caps(False, int8=True)
    assert resolve_precision("int8", CPU, cpu=cpu) == "int8"
    assert resolve_precision("int8", CPU, "openvino", cpu) == "int8"
    assert resolve_backend("auto", CPU, "int8") == "openvino"
    assert resolve_precision("int8", torch.device("cuda"), cpu=cpu) == "float32"
    with caplog.at_level(logging.WARNING, logger="sbert"):
        assert resolve_precision("int8", CPU, "torch", cpu) == "float32"
    assert "runs only on the openvino backend" in caplog.text


def test_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision_module, "openvino_installed", lambda with_nncf=False: True)
    assert resolve_backend("auto", CPU, "bfloat16") == "openvino"
    assert resolve_backend("torch", CPU, "bfloat16") == "torch"
    assert resolve_backend("auto", torch.device("cuda"), "float32") == "torch"
    with pytest.raises(ValueError, match="runs on the CPU, not on cuda"):
        resolve_backend("openvino", torch.device("cuda"), "float32")
    monkeypatch.setattr(precision_module, "openvino_installed", lambda with_nncf=False: False)
    assert resolve_backend("auto", CPU, "float32") == "torch"
    with pytest.raises(ImportError, match=r"pip install \"sbert\[openvino\]\""):
        resolve_backend("openvino", CPU, "float32")
    with pytest.raises(ValueError, match="unknown backend 'onnx'"):
        resolve_backend("onnx", CPU, "float32")
