"""Every compiled graph proves itself on a probe batch before it is used, and encode() never returns
NaN or inf without an error naming the sentence."""

import logging

import numpy as np
import pytest
import torch
from torch import Tensor

from sbert import SentenceEncoder
from sbert.inference import probe
from sbert.inference.probe import UnfaithfulGraph, check_probe

SENTENCES = ["a man plays the guitar", "rain", "the dog runs in the park and the cat sleeps in the sun"]
EXPECTED = torch.tensor([[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]])


def test_a_nan_row_is_named() -> None:
    got = EXPECTED.clone()
    got[1, 2] = float("nan")
    with pytest.raises(UnfaithfulGraph, match="test graph gave NaN or inf for probe row 1"):
        check_probe(EXPECTED, got, "float32", "test graph")


def test_float32_allows_rounding_and_refuses_drift() -> None:
    check_probe(EXPECTED, EXPECTED + 1e-6, "float32", "g")
    with pytest.raises(UnfaithfulGraph, match="differs from PyTorch by 0.001"):
        check_probe(EXPECTED, EXPECTED + 1e-3, "float32", "g")


def test_lower_precisions_are_judged_by_cosine_distance_per_row() -> None:
    check_probe(EXPECTED, EXPECTED * 3, "bfloat16", "g")  # a vector's length is not its direction
    turned = EXPECTED.clone()
    turned[0] = torch.tensor([0.0, 1.0, 0.0])
    with pytest.raises(UnfaithfulGraph, match="bfloat16 is 1 in cosine distance .* probe row 0"):
        check_probe(EXPECTED, turned, "bfloat16", "g")


def test_a_zero_row_agrees_with_a_zero_row_but_not_with_a_vector() -> None:
    zero_first = torch.cat([torch.zeros(1, 3), EXPECTED])
    check_probe(zero_first, zero_first.clone(), "int8", "g")
    with pytest.raises(UnfaithfulGraph, match="probe row 0"):
        check_probe(zero_first, torch.cat([torch.ones(1, 3), EXPECTED]), "int8", "g")


def test_the_probe_batch_pads_short_rows_beside_a_long_one(tiny_encoder: SentenceEncoder) -> None:
    lengths = tiny_encoder.token_ids(probe.probe_texts()).lengths
    assert lengths[0] == 2  # the empty string: its special tokens only
    assert max(lengths) == tiny_encoder.max_seq_length  # the long one is cut to the limit


@pytest.fixture()
def openvino_encoder(tiny_model_dir: object) -> SentenceEncoder:
    pytest.importorskip("openvino")
    return SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32")


def _skewed(model: SentenceEncoder) -> None:
    """Make the PyTorch reference disagree with every graph, as a miscompiled graph would."""
    honest = model.runners.reference_pooled
    model.runners.reference_pooled = lambda ids: honest(ids) + 1.0  # type: ignore[method-assign]


def test_a_graph_that_fails_its_probe_is_not_used(
    openvino_encoder: SentenceEncoder, caplog: pytest.LogCaptureFixture
) -> None:
    assert openvino_encoder.plan.backend == "openvino"
    _skewed(openvino_encoder)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        vectors = openvino_encoder.encode(SENTENCES)
    assert openvino_encoder.plan.backend == "torch"
    assert "differs from PyTorch" in openvino_encoder.plan.fallbacks[0]
    assert any(openvino_encoder.name in r.message and "PyTorch runs it" in r.message for r in caplog.records)
    openvino_encoder.requested_backend = "torch"
    np.testing.assert_array_equal(vectors, openvino_encoder.encode(SENTENCES))


def test_asked_for_openvino_a_graph_that_fails_its_probe_is_an_error(tiny_model_dir: object) -> None:
    pytest.importorskip("openvino")
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="openvino"
    )
    _skewed(model)
    with pytest.raises(UnfaithfulGraph, match="padded graph differs from PyTorch"):
        model.encode(SENTENCES)


def test_a_packed_graph_that_fails_its_probe_leaves_padded_batches_running(
    openvino_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    padded = openvino_encoder.encode(SENTENCES)
    real_check = probe.check_probe

    def fail_packed(expected: Tensor, got: Tensor, precision: str, graph: str) -> None:
        real_check(expected + ("packed" in graph), got, precision, graph)

    monkeypatch.setattr("sbert.inference.openvino.engine.check_probe", fail_packed)
    openvino_encoder.runners.openvino.clear()
    with caplog.at_level(logging.WARNING, logger="sbert"):
        packed = openvino_encoder.encode(SENTENCES, pack=True)
    assert any("packed graph" in r.message and "padded batches run" in r.message for r in caplog.records)
    np.testing.assert_allclose(packed, padded, atol=1e-6)


def test_nan_from_any_engine_is_an_error_naming_the_sentence(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_forward = tiny_encoder.transformer.forward

    def poisoned(features: dict[str, Tensor]) -> Tensor:
        tokens = real_forward(features)  # (batch, seq, hidden)
        lengths = features["attention_mask"].sum(dim=1)
        return torch.where((lengths == 3)[:, None, None], float("nan"), tokens)  # "rain": [CLS] rain [SEP]

    monkeypatch.setattr(tiny_encoder.transformer, "forward", poisoned)
    with pytest.raises(FloatingPointError, match=r"sentence 1 \(of 3\) got a vector with NaN or inf"):
        tiny_encoder.encode(SENTENCES)
