"""Matryoshka truncation: the first d dimensions, unit length again; every sentence encoded once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.embeddings.truncation import PrefixViews, check_dimensions, truncate_embeddings


def test_truncation_keeps_the_first_dimensions_at_unit_length() -> None:
    vectors = np.random.default_rng(0).normal(size=(5, 12)).astype(np.float32)
    cut = truncate_embeddings(vectors, 4)
    assert cut.shape == (5, 4) and cut.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(cut, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(
        cut * np.linalg.norm(vectors[:, :4], axis=1, keepdims=True), vectors[:, :4], rtol=1e-5
    )
    assert truncate_embeddings(vectors[0], 3).shape == (3,)
    assert truncate_embeddings(vectors, None) is not None and truncate_embeddings(vectors, None).shape == (
        5,
        12,
    )
    assert np.all(truncate_embeddings(np.zeros((1, 4)), 2) == 0)  # no division by zero


def test_bad_dimensions_are_refused() -> None:
    with pytest.raises(ValueError, match="between 1 and the model's 384, got 0"):
        check_dimensions(0, 384)
    with pytest.raises(ValueError, match="between 1 and the vectors' 12, got 13"):
        truncate_embeddings(np.ones((2, 12)), 13)
    with pytest.raises(TypeError, match="whole number"):
        check_dimensions(2.5, 384)  # type: ignore[arg-type]


class CountingEncoder:
    dim = 8
    name = "counting"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
        self.encoded += sentences
        return np.array([[len(s) + i for i in range(self.dim)] for s in sentences], dtype=np.float32)


def test_views_encode_each_sentence_once_for_every_prefix() -> None:
    encoder = CountingEncoder()
    views = PrefixViews(encoder)
    full, four, two = views.view(None), views.view(4), views.view(2)
    np.testing.assert_array_equal(full.encode(["ab", "c"]), encoder.encode(["ab", "c"]))
    encoder.encoded.clear()
    np.testing.assert_allclose(
        four.encode(["c", "ab", "new"]), truncate_embeddings(CountingEncoder().encode(["c", "ab", "new"]), 4)
    )
    assert two.encode(["new"]).shape == (1, 2) and (four.dim, full.dim) == (4, 8)
    assert encoder.encoded == ["new"]
    with pytest.raises(ValueError, match="model counting's 8, got 9"):
        views.view(9)


def test_a_view_of_a_real_model_equals_its_vectors_cut(tiny_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    sentences = ["a man plays guitar", "the dog runs"]
    np.testing.assert_allclose(
        PrefixViews(model).view(16).encode(sentences),
        truncate_embeddings(model.encode(sentences), 16),
        atol=1e-6,
    )


def test_prefix_views_of_an_encoder_without_dim_need_its_size() -> None:
    class Bare:  # an Encoder (encode alone), as a baseline or a wrapped model may be
        def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
            return np.arange(4 * len(sentences), dtype=np.float32).reshape(len(sentences), 4) + 1

    with pytest.raises(TypeError, match="Bare gives no dim: pass the size of its vectors"):
        PrefixViews(Bare())
    cut = PrefixViews(Bare(), 4).view(2).encode(["a man", "a dog"])
    np.testing.assert_allclose(cut, truncate_embeddings(Bare().encode(["a man", "a dog"]), 2))
