"""The disk cache of OpenVINO graphs (calibrated and float): built once, read back after, never stale,
never in the way."""

import contextlib
import logging
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tests.conftest import needs_native_int8

from sbert import SentenceEncoder
from sbert.inference.openvino import graph_cache
from sbert.inference.openvino.engine import OpenVinoEngine
from sbert.inference.openvino.graph_cache import cache_dir, fingerprint

pytest.importorskip("nncf")

SENTENCES = ["a man plays the guitar", "the dog runs in the park", "rain"]
CALIBRATION = ["a man is running in the park", "the cat is eating", "a child plays music in the rain"]


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SBERT_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("SBERT_CACHE_DIR", "off")
    assert cache_dir() is None
    monkeypatch.delenv("SBERT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "sbert"


def test_fingerprint_covers_weights_and_recipe(tiny_encoder: SentenceEncoder) -> None:
    module = tiny_encoder.transformer
    key = fingerprint(module, {"precision": "mixed"})
    assert fingerprint(module, {"precision": "mixed"}) == key
    assert fingerprint(module, {"precision": "int8"}) != key
    with torch.no_grad():
        next(module.parameters())[0, 0] += 1e-3
    assert fingerprint(module, {"precision": "mixed"}) != key


def _engine(model: SentenceEncoder) -> OpenVinoEngine:
    return OpenVinoEngine(model.transformer, model.pooling, "mixed", calibration=CALIBRATION)


def _vectors(engine: OpenVinoEngine, model: SentenceEncoder) -> np.ndarray:
    tokenized = model.token_ids(SENTENCES)
    return engine.embed(tokenized.ids, [np.arange(len(SENTENCES))]).numpy()


@pytest.fixture()
def calibrations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    """Counts calibrations, in a cache folder of this test."""
    monkeypatch.setenv("SBERT_CACHE_DIR", str(tmp_path))
    calls: list[int] = []
    quantize = OpenVinoEngine._quantize

    def counted(self: OpenVinoEngine, *args: object) -> object:
        calls.append(1)
        return quantize(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(OpenVinoEngine, "_quantize", counted)
    return calls


@pytest.fixture()
def conversions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    """Counts conversions of the PyTorch model to a graph, in a cache folder of this test."""
    monkeypatch.setenv("SBERT_CACHE_DIR", str(tmp_path))
    calls: list[int] = []
    convert = OpenVinoEngine._convert
    monkeypatch.setattr(
        OpenVinoEngine, "_convert", lambda self, *args: calls.append(1) or convert(self, *args)
    )
    return calls


@pytest.fixture(scope="module")
def calibrated_cache(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding the tiny model's calibrated graph, built once for the tests of what follows a
    first build (test_calibration_runs_once_then_the_graph_is_read tests the first build itself)."""
    folder = tmp_path_factory.mktemp("calibrated-cache")
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SBERT_CACHE_DIR", str(folder))
        _engine(model)
    return folder


@pytest.fixture()
def built(calibrated_cache: Path, calibrations: list[int], tmp_path: Path) -> list[int]:
    """Calibrations counted, in a cache folder of this test that starts with a copy of the built graph."""
    shutil.copytree(calibrated_cache / "openvino", tmp_path / "openvino")
    return calibrations


def test_calibration_runs_once_then_the_graph_is_read(
    tiny_encoder: SentenceEncoder, calibrations: list[int], tmp_path: Path
) -> None:
    first = _vectors(_engine(tiny_encoder), tiny_encoder)
    again = _vectors(_engine(tiny_encoder), tiny_encoder)
    assert len(calibrations) == 1
    np.testing.assert_array_equal(again, first)
    assert len(list((tmp_path / "openvino").glob("*/model.xml"))) == 1
    assert not list((tmp_path / "openvino").glob(".*"))  # no staging folder left behind


def test_the_float_graph_is_converted_once_for_float32_and_bf16(
    tiny_encoder: SentenceEncoder, conversions: list[int], tmp_path: Path
) -> None:
    """A cold process reads the float graph back instead of converting it again (issue 45)."""
    engines = [
        OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, p) for p in ("float32", "bfloat16")
    ]
    again = OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "float32")
    assert len(conversions) == 1 and len(list((tmp_path / "openvino").glob("*/model.xml"))) == 1
    np.testing.assert_array_equal(_vectors(again, tiny_encoder), _vectors(engines[0], tiny_encoder))
    with torch.no_grad():
        tiny_encoder.transformer.model.embeddings.word_embeddings.weight.mul_(1.5)
    OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "float32")
    assert len(conversions) == 2  # changed weights: converted again, never served stale


def test_changed_weights_are_calibrated_again(tiny_encoder: SentenceEncoder, built: list[int]) -> None:
    _engine(tiny_encoder)
    assert built == []  # read from the cache
    with torch.no_grad():
        tiny_encoder.transformer.model.embeddings.word_embeddings.weight.mul_(1.5)
    _engine(tiny_encoder)
    assert len(built) == 1


def test_unreadable_cached_graph_is_rebuilt(
    tiny_encoder: SentenceEncoder, built: list[int], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    expected = _vectors(_engine(tiny_encoder), tiny_encoder)
    assert built == []  # read from the cache
    (stored,) = (tmp_path / "openvino").glob("*/model.xml")
    stored.write_text("<net", encoding="utf-8")  # cut short
    with caplog.at_level(logging.WARNING, logger="sbert"):
        np.testing.assert_array_equal(_vectors(_engine(tiny_encoder), tiny_encoder), expected)
    assert len(built) == 1 and "rebuilding the cached graph" in caplog.text
    np.testing.assert_array_equal(_vectors(_engine(tiny_encoder), tiny_encoder), expected)  # repaired
    assert len(built) == 1


def test_unwritable_cache_warns_and_encodes(
    tiny_encoder: SentenceEncoder,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("SBERT_CACHE_DIR", str(blocker))
    with caplog.at_level(logging.WARNING, logger="sbert"):  # the float graph: the same load_or_build
        engine = OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "float32")
        assert _vectors(engine, tiny_encoder).shape == (3, 32)
    assert "could not cache the OpenVINO graph" in caplog.text


def test_cache_off_stores_nothing(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch, conversions: list[int]
) -> None:
    monkeypatch.setenv("SBERT_CACHE_DIR", "off")
    monkeypatch.setattr(graph_cache, "_store", lambda *args: pytest.fail("stored with the cache off"))
    for _ in range(2):  # the float graph: calibrated ones go through the same load_or_build
        OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "float32")
    assert len(conversions) == 2


def _small_graph() -> Any:
    import openvino as ov
    import openvino.opset13 as ops

    x = ops.parameter([2], np.float32)
    return ov.Model([ops.relu(x)], [x])


def test_only_the_most_recently_used_graphs_are_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    graph = _small_graph
    monkeypatch.setenv("SBERT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(graph_cache, "MAX_GRAPHS", 2)
    stored = tmp_path / "openvino"
    graph_cache.load_or_build("a", graph)
    graph_cache.load_or_build("b", graph)
    os.utime(stored / "a", (1, 1))  # used long ago
    os.utime(stored / "b", (2, 2))
    graph_cache.load_or_build("a", lambda: pytest.fail("a is stored"))  # read: a is recent again
    graph_cache.load_or_build("c", graph)
    assert sorted(p.name for p in stored.iterdir()) == ["a", "c"]


class _Warnings(logging.Handler):
    """sbert's warnings, caught on its own logger (whatever the root logger's handlers do)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture()
def sbert_warnings() -> Iterator[list[str]]:
    handler = _Warnings()
    logger = logging.getLogger("sbert")
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


def test_an_overwritten_graph_of_the_same_size_is_rebuilt(
    tiny_encoder: SentenceEncoder, built: list[int], tmp_path: Path, sbert_warnings: list[str]
) -> None:
    expected = _vectors(_engine(tiny_encoder), tiny_encoder)
    assert built == []  # read from the cache
    (weights,) = (tmp_path / "openvino").glob("*/model.bin")
    data = bytearray(weights.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # same size, other numbers
    weights.write_bytes(bytes(data))
    np.testing.assert_array_equal(_vectors(_engine(tiny_encoder), tiny_encoder), expected)
    assert len(built) == 1
    assert any("model.bin does not match its SHA-256 checksum" in m for m in sbert_warnings)
    np.testing.assert_array_equal(_vectors(_engine(tiny_encoder), tiny_encoder), expected)  # repaired
    assert len(built) == 1


@contextlib.contextmanager
def _full_disk(limit: int = 64) -> Iterator[None]:
    """Writes past ``limit`` bytes fail with EFBIG in this process, as on a full disk."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


@needs_native_int8
def test_int8_runs_from_memory_when_the_cache_cannot_be_written(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sbert_warnings: list[str]
) -> None:
    monkeypatch.setenv("SBERT_CACHE_DIR", str(tmp_path / "full"))
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="int8")
    model.calibration_sentences = CALIBRATION
    with _full_disk():
        in_memory = model.encode(SENTENCES)
        assert model.backend == "openvino" and model.precision == "int8" and "int8" in model.runners.openvino
        graph_cache.load_or_build("another", _small_graph)  # another graph for the full cache
    assert [m for m in sbert_warnings if "could not cache" in m] == [sbert_warnings[0]]  # one warning
    assert not list((tmp_path / "full").rglob("model.xml"))
    exact = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    assert np.abs(in_memory - exact.encode(SENTENCES)).max() > 1e-4  # it ran int8, not float32
