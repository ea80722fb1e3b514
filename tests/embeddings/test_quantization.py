import numpy as np
import pytest

from sbert.quantization import QuantizationRanges, dequantize_embeddings, quantize_codes


@pytest.fixture()
def vectors() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(500, 16)).astype(np.float32)


def test_int8_codes_do_not_depend_on_the_batch(vectors: np.ndarray) -> None:
    ranges = QuantizationRanges.from_vectors(vectors)
    whole = quantize_codes(vectors, "int8", ranges)
    alone = np.stack([quantize_codes(vector, "int8", ranges) for vector in vectors[:20]])
    np.testing.assert_array_equal(whole[:20], alone)
    assert whole.dtype == np.int8 and whole.min() == -128 and whole.max() == 127


def test_int8_round_trip_is_within_half_a_step(vectors: np.ndarray) -> None:
    ranges = QuantizationRanges.from_vectors(vectors)
    for precision in ("int8", "uint8"):
        back = dequantize_embeddings(quantize_codes(vectors, precision, ranges), precision, ranges)
        assert np.max(np.abs(back - vectors) / ranges.step) <= 0.5 + 1e-3


def test_int8_without_ranges_is_refused(vectors: np.ndarray) -> None:
    with pytest.raises(ValueError, match="calibration"):
        quantize_codes(vectors, "int8")


def test_ranges_refuse_another_dimension_or_model(vectors: np.ndarray) -> None:
    ranges = QuantizationRanges.from_vectors(vectors, model_fingerprint="a" * 64)
    with pytest.raises(ValueError, match="16-d"):
        quantize_codes(vectors[:, :8], "int8", ranges)
    with pytest.raises(ValueError, match="another model"):
        ranges.check(16, model_fingerprint="b" * 64)
    again = QuantizationRanges.from_dict(ranges.to_dict())
    np.testing.assert_array_equal(again.minimum, ranges.minimum)


def test_binary_packs_signs() -> None:
    vectors = np.array([[1, -1, 1, -1, 1, -1, 1, -1, 0.5]], dtype=np.float32)
    assert quantize_codes(vectors, "ubinary").tolist() == [[0b10101010, 0b10000000]]
    assert quantize_codes(vectors, "binary").tolist() == [[0b10101010 - 128, 0b10000000 - 128]]


def test_unknown_precision_is_named(vectors: np.ndarray) -> None:
    with pytest.raises(ValueError, match="int4"):
        quantize_codes(vectors, "int4")


def test_int8_codes_of_a_sentence_do_not_depend_on_its_batch(tiny_encoder) -> None:
    sentences = ["a man plays guitar", "the dog runs", "a much longer sentence about the rocket in space"]
    ranges = QuantizationRanges.from_vectors(tiny_encoder.encode(sentences * 3 + ["other words"]))
    together = quantize_codes(tiny_encoder.encode(sentences), "int8", ranges)
    for position, sentence in enumerate(sentences):
        alone = quantize_codes(tiny_encoder.encode([sentence]), "int8", ranges)
        np.testing.assert_array_equal(alone[0], together[position])
