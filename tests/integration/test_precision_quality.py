"""Quality bounds of each precision on the bundled model and the STSb test set (quality, never time)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.evaluation import SimilarityEvaluator
from sbert.inference.cpu import this_cpu
from sbert.inference.openvino.engine import default_calibration_sentences
from sbert.inference.precision import openvino_installed

pytestmark = pytest.mark.integration
BACKENDS_HERE = ["torch", "openvino"] if openvino_installed() else ["torch"]
INT8_HERE = this_cpu().int8 and openvino_installed(with_nncf=True)
AUTO_CANDIDATES = [("bfloat16", backend) for backend in BACKENDS_HERE] + [("mixed", "openvino")]


@pytest.fixture(scope="module")
def pairs(data_dir: Path) -> list:
    return read_stsb("test", data_dir)


@pytest.fixture(scope="module")
def int8_encoder() -> SentenceEncoder:
    if not INT8_HERE:
        pytest.skip("int8 needs VNNI/AMX and the openvino extra")
    return SentenceEncoder.from_pretrained(device="cpu", precision="int8")


@pytest.fixture(scope="module", params=AUTO_CANDIDATES, ids="-".join)
def low_precision_encoder(request: pytest.FixtureRequest) -> SentenceEncoder:
    """The precisions ``auto`` may pick, each bound to STSb Spearman ± 0.1 and cosine distance 0.005."""
    precision, backend = request.param
    if not this_cpu().bf16:
        pytest.skip("this CPU has no native bf16; auto runs float32 here")
    if precision == "mixed" and not INT8_HERE:
        pytest.skip("mixed needs VNNI/AMX and the openvino extra")
    return SentenceEncoder.from_pretrained(device="cpu", precision=precision, backend=backend)


def _max_cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    cosines = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float(1 - cosines.min())


def test_auto_is_bf16_where_the_cpu_has_it_and_never_calibrated() -> None:
    expected = "bfloat16" if this_cpu().bf16 else "float32"
    assert SentenceEncoder.from_pretrained(device="cpu").precision == expected


def test_auto_candidates_keep_spearman_and_distance(
    low_precision_encoder: SentenceEncoder, bundled_encoder: SentenceEncoder, pairs: list
) -> None:
    evaluator = SimilarityEvaluator(pairs, name="stsb-test")
    assert evaluator(low_precision_encoder)["spearman_cosine"] == pytest.approx(82.03, abs=0.1)
    sentences = sorted({s for p in pairs for s in (p.sentence1, p.sentence2)})
    fast = low_precision_encoder.encode(sentences, show_progress_bar=False)
    exact = bundled_encoder.encode(sentences, show_progress_bar=False, compute_precision="float32")
    assert _max_cosine_distance(fast, exact) <= 0.005


def test_auto_candidates_barely_depend_on_the_batch(
    low_precision_encoder: SentenceEncoder, pairs: list
) -> None:
    # Not bit-exact: oneDNN picks its bf16 matrix-product blocking by batch shape (measured ≤ 2e-4).
    sentences = [p.sentence1 for p in pairs[:64]]
    alone = np.stack([low_precision_encoder.encode(s) for s in sentences[:16]])
    for batch_size in (7, 64):
        together = low_precision_encoder.encode(sentences, batch_size=batch_size)[:16]
        np.testing.assert_allclose(together, alone, atol=1e-3)


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_float32_equals_the_pytorch_module(
    bundled_encoder: SentenceEncoder, pairs: list, backend: str
) -> None:
    sentences = [p.sentence2 for p in pairs[:200]]
    features = bundled_encoder.transformer.collate(bundled_encoder.token_ids(sentences).ids)
    with torch.no_grad():
        expected = bundled_encoder(features).numpy()
    encoder = SentenceEncoder.from_pretrained(device="cpu", precision="float32", backend=backend)
    np.testing.assert_allclose(encoder.encode(sentences), expected, atol=1e-5, rtol=0)


def test_int8_spearman_and_distance(
    int8_encoder: SentenceEncoder, bundled_encoder: SentenceEncoder, pairs: list
) -> None:
    # Bounds from the issue: Spearman >= 81.9. The distance bound is ours: measured 0.04 at most.
    assert SimilarityEvaluator(pairs, name="stsb-test")(int8_encoder)["spearman_cosine"] >= 81.9
    sentences = sorted({s for p in pairs for s in (p.sentence1, p.sentence2)})
    exact = bundled_encoder.encode(sentences, show_progress_bar=False, compute_precision="float32")
    assert _max_cosine_distance(int8_encoder.encode(sentences, show_progress_bar=False), exact) <= 0.1


def test_int8_vector_does_not_depend_on_the_batch(int8_encoder: SentenceEncoder, pairs: list) -> None:
    sentences = [p.sentence1 for p in pairs[:64]]
    alone = np.stack([int8_encoder.encode(s) for s in sentences[:16]])
    for batch_size in (7, 64):
        together = int8_encoder.encode(sentences, batch_size=batch_size)[:16]
        np.testing.assert_allclose(together, alone, atol=1e-4, rtol=0)


def test_calibration_set_holds_no_sts_benchmark_sentence(data_dir: Path) -> None:
    """Calibrating on the sentences we are scored on would flatter the int8 figures."""

    def words(text: str) -> str:
        return " ".join("".join(c if c.isalnum() else " " for c in text.lower()).split())

    scored = {
        words(s)
        for split in ("dev", "test")
        for p in read_stsb(split, data_dir)
        for s in (p.sentence1, p.sentence2)
    }
    assert not [s for s in default_calibration_sentences() if words(s) in scored]
