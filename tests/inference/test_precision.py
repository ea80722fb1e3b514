import logging
from pathlib import Path

import pytest
import torch

from sbert.inference import precision as precision_module
from sbert.inference.precision import PRECISIONS, check_precision, cpu_has_native_bf16, resolve_precision

CPU = torch.device("cpu")


def test_unknown_precision_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown precision 'fp8'; choose one of auto, float32, bfloat16"):
        check_precision("fp8")
    assert check_precision("BFloat16") == "bfloat16"
    assert PRECISIONS == ("auto", "float32", "bfloat16")


@pytest.mark.parametrize(
    ("flags", "native"),
    [
        ("flags\t: fpu sse avx512f avx512_vnni avx512_bf16", True),
        ("flags\t: fpu sse avx512f amx_bf16 amx_tile", True),
        ("Features\t: fp asimd bf16 i8mm", True),
        ("flags\t: fpu sse avx2 avx512f avx512_vnni", False),
        ("processor\t: 0", False),
    ],
)
def test_native_bf16_is_read_from_cpu_flags(tmp_path: Path, flags: str, native: bool) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\n{flags}\n", encoding="utf-8")
    assert cpu_has_native_bf16(cpuinfo) is native


def test_auto_follows_the_hardware(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision_module, "_native_bf16", lambda device: True)
    assert resolve_precision("auto", CPU) == "bfloat16"
    assert resolve_precision("float32", CPU) == "float32"
    monkeypatch.setattr(precision_module, "_native_bf16", lambda device: False)
    assert resolve_precision("auto", CPU) == "float32"


def test_bf16_without_hardware_falls_back_with_one_notice(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(precision_module, "_native_bf16", lambda device: False)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        assert resolve_precision("bfloat16", CPU) == "float32"
    notices = [r.getMessage() for r in caplog.records]
    assert len(notices) == 1 and "float32 is used instead" in notices[0]
