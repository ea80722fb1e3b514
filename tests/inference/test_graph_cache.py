"""The disk cache of calibrated graphs: built once, read back after, never stale, never in the way."""

import logging
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.inference import graph_cache
from sbert.inference.graph_cache import cache_dir, fingerprint
from sbert.inference.openvino_engine import OpenVinoEngine

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
    tokenized = model.tokenize(SENTENCES)
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


def test_calibration_runs_once_then_the_graph_is_read(
    tiny_encoder: SentenceEncoder, calibrations: list[int], tmp_path: Path
) -> None:
    first = _vectors(_engine(tiny_encoder), tiny_encoder)
    again = _vectors(_engine(tiny_encoder), tiny_encoder)
    assert len(calibrations) == 1
    np.testing.assert_array_equal(again, first)
    assert len(list((tmp_path / "openvino").glob("*/model.xml"))) == 1
    assert not list((tmp_path / "openvino").glob(".*"))  # no staging folder left behind


def test_changed_weights_are_calibrated_again(tiny_encoder: SentenceEncoder, calibrations: list[int]) -> None:
    _engine(tiny_encoder)
    with torch.no_grad():
        tiny_encoder.transformer.model.embeddings.word_embeddings.weight.mul_(1.5)
    _engine(tiny_encoder)
    assert len(calibrations) == 2


def test_unreadable_cached_graph_is_rebuilt(
    tiny_encoder: SentenceEncoder, calibrations: list[int], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    expected = _vectors(_engine(tiny_encoder), tiny_encoder)
    (stored,) = (tmp_path / "openvino").glob("*/model.xml")
    stored.write_text("<net", encoding="utf-8")  # cut short
    with caplog.at_level(logging.WARNING, logger="sbert"):
        np.testing.assert_array_equal(_vectors(_engine(tiny_encoder), tiny_encoder), expected)
    assert len(calibrations) == 2 and "rebuilding the unreadable cached graph" in caplog.text
    np.testing.assert_array_equal(_vectors(_engine(tiny_encoder), tiny_encoder), expected)  # repaired
    assert len(calibrations) == 2


def test_unwritable_cache_warns_and_encodes(
    tiny_encoder: SentenceEncoder,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("SBERT_CACHE_DIR", str(blocker))
    with caplog.at_level(logging.WARNING, logger="sbert"):
        assert _vectors(_engine(tiny_encoder), tiny_encoder).shape == (3, 32)
    assert "could not cache the calibrated graph" in caplog.text


def test_cache_off_stores_nothing(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch, calibrations: list[int], tmp_path: Path
) -> None:
    monkeypatch.setenv("SBERT_CACHE_DIR", "off")
    monkeypatch.setattr(graph_cache, "_store", lambda *args: pytest.fail("stored with the cache off"))
    _engine(tiny_encoder)
    _engine(tiny_encoder)
    assert len(calibrations) == 2


def test_only_the_most_recently_used_graphs_are_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import openvino as ov
    import openvino.opset13 as ops

    def graph() -> ov.Model:
        x = ops.parameter([2], np.float32)
        return ov.Model([ops.relu(x)], [x])

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
