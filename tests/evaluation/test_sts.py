from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from sbert.data import ScoredPair
from sbert.data.sts import STS_SUBSETS
from sbert.evaluation.similarity import SimilarityEvaluator
from sbert.evaluation.sts import PrecomputedEncoder, evaluate_sts, spearman_cosine


def write_sts13(root: Path, rows: dict[str, list[tuple[str, str]]]) -> None:
    """STS13 in the original layout: {subset: [(input line, gold line)]}."""
    folder = root / "sts12-16" / "original" / "STS13-en-test"
    folder.mkdir(parents=True)
    for subset in STS_SUBSETS["STS13"]:
        (folder / f"STS.input.{subset}.txt").write_text("".join(i + "\n" for i, _ in rows[subset]), "utf-8")
        (folder / f"STS.gs.{subset}.txt").write_text("".join(g + "\n" for _, g in rows[subset]), "utf-8")


class HashEncoder:
    """Deterministic pseudo-random vectors per sentence; records every sentence it encodes."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
        self.seen.extend(sentences)
        return np.array(
            [np.random.default_rng(sum(map(ord, s)) + len(s)).normal(size=8) for s in sentences],
            dtype=np.float32,
        )


def write_stsb_and_sick(root: Path) -> None:
    stsb = root / "stsb" / "original"
    stsb.mkdir(parents=True)
    rows = [
        ("a man plays", "a man is playing", 4.5),
        ("a cat", "the stock market", 0.2),
        ("dogs run", "a dog runs", 3.8),
    ]
    (stsb / "sts-test.csv").write_text(
        "".join(f"g\tf\t2012\t{i}\t{s}\t{a}\t{b}\n" for i, (a, b, s) in enumerate(rows)), "utf-8"
    )
    sick = root / "sick" / "senteval"
    sick.mkdir(parents=True)
    (sick / "SICK_test_annotated.txt").write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\ta man plays\ta woman sings\t3.0\tNEUTRAL\n"
        "2\ta cat\ta cat sleeps\t4.0\tENTAILMENT\n"
        "3\tdogs run\tit rains\t1.2\tNEUTRAL\n",
        "utf-8",
    )


def test_pooled_subsets_and_each_sentence_encoded_once(tmp_path: Path) -> None:
    write_stsb_and_sick(tmp_path)
    write_sts13(
        tmp_path,
        {
            "FNWN": [("a man plays\ta man sings", "3.5"), ("a cat\tdogs run", "1.0")],
            "headlines": [("a cat\ta cat sleeps", "4.2"), ("it rains\ta man plays", "0.4")],
            "OnWN": [("dogs run\ta dog runs", "4.9"), ("x\ty", "2.0")],
        },
    )
    encoder = HashEncoder()
    results = evaluate_sts(encoder, tmp_path, sets=["SICK-R", "STS13", "STSb"])
    assert list(results) == ["STS13", "STSb", "SICK-R"]  # Table 1's order
    assert len(encoder.seen) == len(set(encoder.seen))  # once per run, across all sets

    pooled = [
        ScoredPair("a man plays", "a man sings", 3.5),
        ScoredPair("a cat", "dogs run", 1.0),
        ScoredPair("a cat", "a cat sleeps", 4.2),
        ScoredPair("it rains", "a man plays", 0.4),
        ScoredPair("dogs run", "a dog runs", 4.9),
        ScoredPair("x", "y", 2.0),
    ]
    expected = SimilarityEvaluator(pooled)(HashEncoder())
    assert results["STS13"]["all"]["pairs"] == 6
    assert results["STS13"]["all"]["spearman_cosine"] == pytest.approx(expected["spearman_cosine"])
    assert set(results["STS13"]["subsets"]) == {"FNWN", "headlines", "OnWN"}
    assert "subsets" not in results["STSb"]
    u, v = (
        HashEncoder().encode(["a man plays", "a cat", "dogs run"]),
        HashEncoder().encode(["a man is playing", "the stock market", "a dog runs"]),
    )
    cosine = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    assert spearman_cosine(results)["STSb"] == pytest.approx(
        spearmanr(cosine, [4.5, 0.2, 3.8]).statistic * 100
    )


def test_unknown_set_and_missing_data(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown STS set 'STS17'"):
        evaluate_sts(HashEncoder(), tmp_path, sets=["STS17"])
    with pytest.raises(FileNotFoundError, match=r"STSb test: .*sts-test.csv not found"):
        evaluate_sts(HashEncoder(), tmp_path, sets=["STSb"])


def test_precomputed_encoder_rejects_unknown_sentence() -> None:
    cache = PrecomputedEncoder(["a"], np.ones((1, 2), dtype=np.float32))
    with pytest.raises(KeyError, match="not pre-encoded"):
        cache.encode(["b"])


def test_senteval_subset_means_beside_the_pooled_figure(tmp_path: Path) -> None:
    write_sts13(
        tmp_path,
        {
            "FNWN": [("a man plays\ta man sings", "3.5"), ("a cat\tdogs run", "1.0"), ("x\ty", "2.0")],
            "headlines": [("a cat\ta cat sleeps", "4.2"), ("it rains\ta man plays", "0.4")],
            "OnWN": [("dogs run\ta dog runs", "4.9"), ("a b\tc d", "2.0"), ("e\tf", "1.0")],
        },
    )
    results = evaluate_sts(HashEncoder(), tmp_path, sets=["STS13"])["STS13"]
    per_subset = {name: scores["spearman_cosine"] for name, scores in results["subsets"].items()}
    pairs = {name: scores["pairs"] for name, scores in results["subsets"].items()}
    assert pairs == {"FNWN": 3, "headlines": 2, "OnWN": 3}
    # SentEval's "mean" and "wmean" (weights: pair counts), not the pooled correlation.
    assert results["subset_mean"]["spearman_cosine"] == pytest.approx(np.mean(list(per_subset.values())))
    weighted = sum(per_subset[name] * pairs[name] for name in pairs) / 8
    assert results["weighted_mean"]["spearman_cosine"] == pytest.approx(weighted)
    assert results["weighted_mean"]["pairs"] == results["subset_mean"]["pairs"] == 8
    assert spearman_cosine({"STS13": results}, "weighted_mean")["STS13"] == pytest.approx(weighted)
    assert results["weighted_mean"]["spearman_cosine"] != pytest.approx(results["all"]["spearman_cosine"])
    with pytest.raises(ValueError, match="unknown STS summary 'median'"):
        spearman_cosine({"STS13": results}, "median")
