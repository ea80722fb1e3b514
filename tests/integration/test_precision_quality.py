"""Quality bounds of each precision on the bundled model and the STSb test set (quality, never time)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.evaluation import SimilarityEvaluator
from sbert.inference import cpu_has_native_bf16

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pairs(data_dir: Path) -> list:
    return read_stsb("test", data_dir)


@pytest.fixture(scope="module")
def bf16_encoder() -> SentenceEncoder:
    if not cpu_has_native_bf16():
        pytest.skip("this CPU has no native bf16; auto runs float32 here")
    return SentenceEncoder.from_pretrained(device="cpu", precision="bfloat16")


def test_auto_is_bf16_where_the_cpu_has_it() -> None:
    expected = "bfloat16" if cpu_has_native_bf16() else "float32"
    assert SentenceEncoder.from_pretrained(device="cpu").precision == expected


def test_bfloat16_spearman_and_distance(
    bf16_encoder: SentenceEncoder, bundled_encoder: SentenceEncoder, pairs: list
) -> None:
    evaluator = SimilarityEvaluator(pairs, name="stsb-test")
    assert evaluator(bf16_encoder)["spearman_cosine"] == pytest.approx(82.03, abs=0.1)
    sentences = sorted({s for p in pairs for s in (p.sentence1, p.sentence2)})
    fast = bf16_encoder.encode(sentences, show_progress_bar=False)
    exact = bundled_encoder.encode(sentences, show_progress_bar=False)
    cosines = (fast * exact).sum(1) / np.linalg.norm(fast, axis=1) / np.linalg.norm(exact, axis=1)
    assert 1 - cosines.min() <= 0.005


def test_bfloat16_vector_barely_depends_on_the_batch(bf16_encoder: SentenceEncoder, pairs: list) -> None:
    # Not bit-exact: oneDNN picks its bf16 matrix-product blocking by batch shape (measured ≤ 2e-4).
    sentences = [p.sentence1 for p in pairs[:64]]
    alone = np.stack([bf16_encoder.encode(s) for s in sentences[:16]])
    for batch_size in (7, 64):
        together = bf16_encoder.encode(sentences, batch_size=batch_size)[:16]
        np.testing.assert_allclose(together, alone, atol=1e-3)


def test_float32_equals_the_pytorch_module(bundled_encoder: SentenceEncoder, pairs: list) -> None:
    sentences = [p.sentence2 for p in pairs[:200]]
    features = bundled_encoder.transformer.collate(bundled_encoder.tokenize(sentences).ids)
    with torch.no_grad():
        expected = bundled_encoder(features).numpy()
    np.testing.assert_allclose(bundled_encoder.encode(sentences, precision="float32"), expected, atol=1e-5)
