"""The OpenVINO engine on a tiny random BERT: equal to PyTorch in float32, batch-independent in int8,
int8 only where ``mixed`` wants it."""

import logging
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.conftest import needs_native_int8

from sbert import SentenceEncoder
from sbert.base.batching import length_sorted_batches
from sbert.inference.openvino import engine as openvino_engine
from sbert.inference.openvino.engine import OpenVinoEngine, default_calibration_sentences
from sbert.modules import Dense, Normalize

pytest.importorskip("openvino")

SENTENCES = [
    "a man plays the guitar",
    "the dog runs in the park",
    "rain",
    "a small red car and a big blue car",
    "the woman cooks food and the child eats",
    "no",
    "a cat is playing with a bug in the sun and the rain",
]
CALIBRATION = [
    f"{a} {b} is {c} in the {d}"
    for a, b, c, d in zip(
        ["a", "the", "a", "the"] * 4,
        ["man", "woman", "child", "dog", "cat"] * 4,
        ["running", "playing", "eating", "happy"] * 5,
        ["park", "street", "rain", "sun", "space"] * 4,
    )
]


def _encoder(path: Path, pooling: str = "mean", **kwargs: object) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(path, device="cpu", pooling=pooling, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_float32_equals_pytorch_with_layers_after_pooling(tiny_model_dir: Path, pooling: str) -> None:
    model = _encoder(tiny_model_dir, pooling)
    model.layers.extend([Dense(32, 8), Normalize()])
    features = model.transformer.collate(model.token_ids(SENTENCES).ids)
    with torch.no_grad():
        expected = model(features).numpy()
    model.requested_backend = "openvino"
    np.testing.assert_allclose(model.encode(SENTENCES, compute_precision="float32"), expected, atol=1e-5)


@needs_native_int8
def test_int8_vector_does_not_depend_on_its_batch(tiny_model_dir: Path) -> None:
    model = _encoder(tiny_model_dir, precision="int8", calibration_sentences=CALIBRATION)
    assert (model.precision, model.backend) == ("int8", "openvino")
    alone = np.stack([model.encode(s) for s in SENTENCES])
    for batch_size in (2, 3, 32):
        np.testing.assert_allclose(model.encode(SENTENCES, batch_size=batch_size), alone, atol=1e-4, rtol=0)
    exact = model.encode(SENTENCES, compute_precision="float32")
    cosines = (alone * exact).sum(1) / np.linalg.norm(alone, axis=1) / np.linalg.norm(exact, axis=1)
    assert cosines.min() > 0.9 and np.abs(alone - exact).max() > 1e-4  # close, and really quantized


def _int8_products(engine: OpenVinoEngine) -> list[str]:
    """The layers of the compiled graph whose matrix products run on 8-bit inputs."""
    names = []
    for op in engine.requests[0].get_compiled_model().get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        if info["layerType"].astype(str) == "FullyConnected" and info["runtimePrecision"].astype(str) in (
            "u8",
            "i8",
        ):
            names.append(op.get_friendly_name().split("/")[0].split("model.encoder.")[1])
    return names


def test_mixed_runs_int8_only_on_query_key_and_feed_forward_input(tiny_encoder: SentenceEncoder) -> None:
    mixed = OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "mixed", calibration=CALIBRATION)
    expected = [
        f"layer.{i}.{name}"
        for i in (0, 1)
        for name in ("attention.self.query", "attention.self.key", "intermediate.dense")
    ]
    assert _int8_products(mixed) == expected
    full = OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "int8", calibration=CALIBRATION)
    assert len(_int8_products(full)) == 12  # six per layer


def test_mixed_without_bert_names_runs_unquantized_with_a_warning(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(openvino_engine, "MIXED_INT8_LAYERS", re.compile(r"attn\.q_proj/"))
    with caplog.at_level(logging.WARNING, logger="sbert"):
        engine = OpenVinoEngine(
            tiny_encoder.transformer, tiny_encoder.pooling, "mixed", calibration=CALIBRATION
        )
    assert "no BERT-named projection" in caplog.text
    assert _int8_products(engine) == []


@needs_native_int8
def test_mixed_is_close_to_float32_and_to_itself_in_any_batch(tiny_model_dir: Path) -> None:
    model = _encoder(tiny_model_dir, precision="mixed", calibration_sentences=CALIBRATION)
    assert (model.precision, model.backend) == ("mixed", "openvino")
    alone = np.stack([model.encode(s) for s in SENTENCES])
    for batch_size in (2, 32):  # bf16 parts: oneDNN blocks by batch shape, so not bit-exact
        np.testing.assert_allclose(model.encode(SENTENCES, batch_size=batch_size), alone, atol=1e-3, rtol=0)
    exact = model.encode(SENTENCES, compute_precision="float32")
    cosines = (alone * exact).sum(1) / np.linalg.norm(alone, axis=1) / np.linalg.norm(exact, axis=1)
    assert cosines.min() > 0.99 and np.abs(alone - exact).max() > 1e-4  # close, and really quantized


@needs_native_int8
def test_int8_ranges_come_from_the_calibration_set(tiny_model_dir: Path) -> None:
    ours = _encoder(tiny_model_dir, precision="int8", calibration_sentences=CALIBRATION)
    again = _encoder(tiny_model_dir, precision="int8", calibration_sentences=list(CALIBRATION))
    bundled = _encoder(tiny_model_dir, precision="int8")
    vectors = ours.encode(SENTENCES)
    np.testing.assert_array_equal(again.encode(SENTENCES), vectors)  # the cached graph
    assert np.abs(bundled.encode(SENTENCES) - vectors).max() > 1e-4


def test_empty_calibration_set_is_refused(tiny_encoder: SentenceEncoder) -> None:
    with pytest.raises(ValueError, match="at least one sentence"):
        OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "int8", calibration=[])


def test_bundled_calibration_set_is_varied_and_unique() -> None:
    sentences = default_calibration_sentences()
    assert len(sentences) >= 150 and len(set(sentences)) == len(sentences)
    assert any("?" in s for s in sentences) and any(len(s.split()) > 25 for s in sentences)


def test_embed_keeps_input_order_and_reports_each_batch(tiny_encoder: SentenceEncoder) -> None:
    engine = OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "float32")
    tokenized = tiny_encoder.token_ids(SENTENCES)
    batches = length_sorted_batches(tokenized.lengths, 2)
    calls: list[int] = []
    pooled = engine.embed(tokenized.ids, batches, on_batch=lambda: calls.append(1))
    features = tiny_encoder.transformer.collate(tokenized.ids)
    with torch.no_grad():
        expected = tiny_encoder.pooling(tiny_encoder.transformer(features), features["attention_mask"])
    torch.testing.assert_close(pooled, expected, atol=1e-5, rtol=0)
    assert len(calls) == len(batches)


def test_unknown_engine_precision_is_refused(tiny_encoder: SentenceEncoder) -> None:
    with pytest.raises(ValueError, match="not 'float16'"):
        OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "float16")
