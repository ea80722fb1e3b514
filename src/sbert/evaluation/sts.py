"""STS evaluation: the paper's Table 1 sets (STS12-16, STSb test, SICK-R test) for any encoder.

For each set: Spearman and Pearson × 100 between the gold scores and the cosine similarity (also
negated Euclidean, negated Manhattan, dot) of the two sentence vectors. STS12-16 have three
summaries, labelled apart because the literature mixes them:

- ``all``: one correlation over every subset's pairs pooled (the paper's figure; SimCSE's and MTEB's
  convention);
- ``subset_mean`` and ``weighted_mean``: the mean of the per-subset correlations, plain and weighted by
  each subset's pair count (SentEval's convention, its ``all``/``mean`` and ``all``/``wmean``,
  following ``senteval/sts.py`` of facebookresearch/SentEval).

Every distinct sentence of all requested sets is encoded once per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from torch import Tensor

from sbert.base.contracts import Encoder
from sbert.data.readers import read_stsb
from sbert.data.records import ScoredPair
from sbert.data.sts import STS_SUBSETS, read_sick, read_sts
from sbert.evaluation.similarity import SimilarityEvaluator

STS_SETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R")


def load_sts_sets(
    sets: Sequence[str] | None = None,
    data_dir: str | Path | None = None,
    source: str = "original",
    skip_bad_lines: bool = False,
) -> dict[str, dict[str, list[ScoredPair]]]:
    """The test pairs of each set, by subset (``STSb`` and ``SICK-R`` have one subset, ``test``)."""
    chosen = check_sets(sets)
    data: dict[str, dict[str, list[ScoredPair]]] = {}
    for name in chosen:
        if name in STS_SUBSETS:
            data[name] = read_sts(name, data_dir, source=source, skip_bad_lines=skip_bad_lines)
        elif name == "STSb":
            data[name] = {"test": read_stsb("test", data_dir, skip_bad_lines=skip_bad_lines)}
        else:
            data[name] = {"test": read_sick("test", data_dir, skip_bad_lines=skip_bad_lines)}
    return data


def check_sets(sets: Sequence[str] | None) -> list[str]:
    """The requested set names in Table 1's order; ``ValueError`` names an unknown one."""
    if sets is None:
        return list(STS_SETS)
    unknown = [name for name in sets if name not in STS_SETS]
    if unknown:
        raise ValueError(f"unknown STS set {unknown[0]!r}; choose from {', '.join(STS_SETS)}")
    return [name for name in STS_SETS if name in sets]


class PrecomputedEncoder:
    """Serves vectors computed once, so that every set's evaluator reuses the same encodings.

    Examples:
        >>> cache = PrecomputedEncoder(["a", "b"], np.eye(2, dtype=np.float32))
        >>> cache.encode(["b", "a"]).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """

    def __init__(self, sentences: Sequence[str], vectors: np.ndarray | Tensor) -> None:
        self.vectors = np.asarray(vectors)  # (n, dim)
        self.row = {sentence: i for i, sentence in enumerate(sentences)}

    def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
        missing = [s for s in sentences if s not in self.row]
        if missing:
            raise KeyError(f"sentence was not pre-encoded: {missing[0][:80]!r}")
        return self.vectors[[self.row[s] for s in sentences]]


def encode_once(model: Encoder, sentences: Sequence[str], batch_size: int = 32) -> PrecomputedEncoder:
    """Encode each distinct sentence once and return a lookup encoder over the vectors."""
    unique = list(dict.fromkeys(sentences))
    return PrecomputedEncoder(unique, np.asarray(model.encode(unique, batch_size=batch_size)))


def evaluate_sts(
    model: Encoder,
    data_dir: str | Path | None = None,
    sets: Sequence[str] | None = None,
    source: str = "original",
    batch_size: int = 32,
    skip_bad_lines: bool = False,
) -> dict[str, dict]:
    """Evaluate an encoder on the STS sets of the paper's Table 1.

    Args:
        model: Anything with ``encode(sentences, batch_size=...)``: a SentenceEncoder or a baseline.
        data_dir: The data directory (default ``$SBERT_DATA``).
        sets: Any of ``STS12`` ... ``STS16``, ``STSb``, ``SICK-R`` (default: all seven).
        source: STS12-16 text: ``original`` (default, as MTEB) or ``senteval`` (tokenized, lower-cased).
        batch_size: Sentences per forward pass.
        skip_bad_lines: Skip malformed data lines (and log how many) instead of raising.

    Returns:
        ``{set: {"all": metrics, "subsets": {subset: metrics}, "subset_mean": metrics,
        "weighted_mean": metrics}}``; metrics are ``spearman_cosine``, ``pearson_cosine``, ... (× 100)
        and ``pairs``. STSb and SICK-R have one subset, so only ``all``.

    Not run by the tests: it encodes 2,758 sentences in float32 (tests/integration/test_evaluation.py
    checks the figure).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained(precision="float32")  # doctest: +SKIP
        >>> results = evaluate_sts(model, "../shared/data", sets=["STSb"])  # doctest: +SKIP
        >>> round(results["STSb"]["all"]["spearman_cosine"], 2)  # doctest: +SKIP
        82.03
    """
    data = load_sts_sets(sets, data_dir, source=source, skip_bad_lines=skip_bad_lines)
    pairs = [pair for subsets in data.values() for part in subsets.values() for pair in part]
    cache = encode_once(model, [s for pair in pairs for s in (pair.sentence1, pair.sentence2)], batch_size)
    results: dict[str, dict] = {}
    for name, subsets in data.items():
        pooled = [pair for part in subsets.values() for pair in part]
        results[name] = {"all": score_pairs(cache, pooled, name)}
        if len(subsets) > 1:
            scores = {
                subset: score_pairs(cache, part, f"{name} {subset}") for subset, part in subsets.items()
            }
            results[name].update(subsets=scores, **subset_averages(list(scores.values())))
    return results


def subset_averages(scores: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """SentEval's two summaries of per-subset metrics: the plain and the pair-weighted mean.

    Examples:
        >>> averages = subset_averages([{"spearman_cosine": 80.0, "pairs": 300}, {"spearman_cosine": 60.0, "pairs": 100}])
        >>> averages["subset_mean"]["spearman_cosine"], averages["weighted_mean"]["spearman_cosine"]
        (70.0, 75.0)
    """
    weights = np.array([entry["pairs"] for entry in scores], dtype=np.float64)
    metrics = [key for key in scores[0] if key != "pairs"]
    total = int(weights.sum())
    return {
        "subset_mean": {key: float(np.mean([entry[key] for entry in scores])) for key in metrics}
        | {"pairs": total},
        "weighted_mean": {
            key: float(np.average([entry[key] for entry in scores], weights=weights)) for key in metrics
        }
        | {"pairs": total},
    }


def score_pairs(model: Encoder, pairs: Sequence[ScoredPair], name: str) -> dict[str, float]:
    """SimilarityEvaluator's correlations for ``pairs``, with the pair count."""
    return {**SimilarityEvaluator(pairs, name=name)(model), "pairs": len(pairs)}


STS_SUMMARIES = ("all", "subset_mean", "weighted_mean")


def spearman_cosine(results: dict[str, dict], summary: str = "all") -> dict[str, float]:
    """Spearman × 100 of the cosine similarity per set.

    ``summary`` picks the STS12-16 figure: ``all`` (pooled, the paper's), ``subset_mean`` or
    ``weighted_mean`` (SentEval's); STSb and SICK-R have only the one.
    """
    if summary not in STS_SUMMARIES:
        raise ValueError(f"unknown STS summary {summary!r}; choose from {', '.join(STS_SUMMARIES)}")
    return {name: entry.get(summary, entry["all"])["spearman_cosine"] for name, entry in results.items()}
