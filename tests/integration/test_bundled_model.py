"""The bundled all-MiniLM-L6-v2 against sentence-transformers on the 2758 STSb test sentences."""

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer

from sbert import SentenceEncoder
from sbert.cli.demo import stsb_test_spearman
from sbert.data import read_stsb
from sbert.model.hub import bundled_model_path

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stsb_sentences(data_dir: Path) -> list[str]:
    pairs = read_stsb("test", data_dir)
    return [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]


@pytest.fixture(scope="module")
def reference(stsb_sentences: list[str]) -> np.ndarray:
    model = SentenceTransformer(str(bundled_model_path()), device="cpu")
    return model.encode(stsb_sentences, batch_size=32)


@pytest.fixture(scope="module")
def ours(bundled_encoder: SentenceEncoder, stsb_sentences: list[str]) -> np.ndarray:
    # One pass over the test sentences (sentence1s, then sentence2s) serves both the comparison with
    # sentence-transformers and the scipy cross-check of the figure.
    return bundled_encoder.encode(stsb_sentences)


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_embeddings_equal_sentence_transformers(
    stsb_sentences: list[str], ours: np.ndarray, reference: np.ndarray
) -> None:
    assert len(stsb_sentences) == 2758
    assert _row_cosines(ours, reference).min() >= 0.99999


def test_stsb_test_spearman_is_published_figure(
    bundled_encoder: SentenceEncoder, data_dir: Path, ours: np.ndarray
) -> None:
    assert stsb_test_spearman(bundled_encoder, str(data_dir)) == pytest.approx(82.03, abs=0.01)
    pairs = read_stsb("test", data_dir)  # cross-check the figure with scipy directly
    u, v = ours[: len(pairs)], ours[len(pairs) :]  # the vectors of each pair's sentence1, sentence2
    assert spearmanr(_row_cosines(u, v), [p.score for p in pairs]).statistic * 100 == pytest.approx(
        82.03, abs=0.01
    )


def test_saved_bundled_model_loads_in_sentence_transformers(
    bundled_encoder: SentenceEncoder, stsb_sentences: list[str], reference: np.ndarray, tmp_path: Path
) -> None:
    bundled_encoder.save(tmp_path / "copy")
    reloaded = SentenceTransformer(str(tmp_path / "copy"), device="cpu")
    sample = stsb_sentences[:200]
    assert _row_cosines(reloaded.encode(sample), reference[:200]).min() >= 0.99999
    ours = SentenceEncoder.from_pretrained(tmp_path / "copy", device="cpu", precision="float32")
    assert _row_cosines(ours.encode(sample), reference[:200]).min() >= 0.99999
