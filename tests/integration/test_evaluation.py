"""The STS evaluation against sentence-transformers' EmbeddingSimilarityEvaluator.

On the bundled model, sbert's STSb figure is the published one, and on STS16 (the set with the file
layout trap, and the smallest) sbert's whole path equals sentence-transformers' own encoding and
evaluator. On every one of the seven sets, sentence-transformers' evaluator scores the vectors sbert
scored, which checks the pairs (STS13's missing SMT input, STS16's layout) and the correlations;
those vectors are averaged GloVe's, which are real sentence vectors made in a second (the bundled
model's on all seven sets took 150 s of CPU, and that they equal sentence-transformers' is tested in
test_bundled_model.py).
"""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from sbert import SentenceEncoder
from sbert.evaluation.baselines import AveragedGloVe
from sbert.evaluation.sts import PrecomputedEncoder, encode_once, evaluate_sts, load_sts_sets
from sbert.model.hub import bundled_model_path

pytestmark = pytest.mark.integration

PAIRS = {
    "STS12": 3108,
    "STS13": 1500,
    "STS14": 3750,
    "STS15": 3000,
    "STS16": 1186,
    "STSb": 1379,
    "SICK-R": 4927,
}
SIMILARITIES = ["cosine", "euclidean", "manhattan", "dot"]


@pytest.fixture(scope="module")
def sets(data_dir: Path) -> dict:
    return load_sts_sets(data_dir=data_dir)


@pytest.fixture(scope="module")
def cache(sets: dict) -> PrecomputedEncoder:
    sentences = [
        s
        for subsets in sets.values()
        for part in subsets.values()
        for p in part
        for s in (p.sentence1, p.sentence2)
    ]
    return encode_once(AveragedGloVe.from_package(), sentences)


@pytest.fixture(scope="module")
def results(cache: PrecomputedEncoder, data_dir: Path) -> dict:
    return evaluate_sts(cache, data_dir)  # the cache serves the vectors: GloVe encodes once per module


@pytest.fixture(scope="module")
def bundled_results(bundled_encoder: SentenceEncoder, data_dir: Path) -> dict:
    return evaluate_sts(bundled_encoder, data_dir, sets=["STS16", "STSb"])


class Vectors:
    """Hands sbert's vectors to sentence-transformers' evaluator in place of a model."""

    def __init__(self, cache: PrecomputedEncoder) -> None:
        self.cache = cache
        self.model_card_data = SimpleNamespace(set_evaluation_metrics=lambda *args, **kwargs: None)

    def encode(self, sentences: list[str], **kwargs: object) -> np.ndarray:
        return self.cache.encode(list(sentences))


def reference(model: object, name: str, sets: dict) -> dict[str, float]:
    pairs = [p for part in sets[name].values() for p in part]
    evaluator = EmbeddingSimilarityEvaluator(
        [p.sentence1 for p in pairs],
        [p.sentence2 for p in pairs],
        [p.score for p in pairs],
        similarity_fn_names=SIMILARITIES,  # type: ignore[arg-type]
        name=name,
        write_csv=False,
    )
    scores = evaluator(model)  # type: ignore[arg-type]
    return {key.removeprefix(f"{name}_"): 100 * value for key, value in scores.items()}


def test_stsb_test_spearman_is_published_figure_and_counts(bundled_results: dict, results: dict) -> None:
    assert bundled_results["STSb"]["all"]["spearman_cosine"] == pytest.approx(82.03, abs=0.01)
    assert {name: entry["all"]["pairs"] for name, entry in results.items()} == PAIRS
    assert sum(s["pairs"] for s in results["STS16"]["subsets"].values()) == 1186


# One set end to end against sentence-transformers' own encoding (STS16, the smallest); the others
# compare the evaluator on the same vectors, since test_bundled_model compares the vectors themselves
# (2 minutes of CPU saved on a 2-core machine).
@pytest.mark.parametrize("name", ["STS16"])
def test_equals_sentence_transformers_encoding_and_evaluator(
    name: str, bundled_results: dict, sets: dict
) -> None:
    theirs = reference(SentenceTransformer(str(bundled_model_path()), device="cpu"), name, sets)
    for similarity in SIMILARITIES:
        for metric in ("spearman", "pearson"):
            key = f"{metric}_{similarity}"
            assert bundled_results[name]["all"][key] == pytest.approx(theirs[key], abs=0.01), key


@pytest.mark.parametrize("name", list(PAIRS))
def test_equals_sentence_transformers_evaluator_on_same_vectors(
    name: str, results: dict, sets: dict, cache: PrecomputedEncoder
) -> None:
    theirs = reference(Vectors(cache), name, sets)
    for similarity in SIMILARITIES:
        for metric in ("spearman", "pearson"):
            key = f"{metric}_{similarity}"
            assert results[name]["all"][key] == pytest.approx(theirs[key], abs=0.01), key
