"""Plain typed records that every reader returns and every evaluation or trainer consumes."""

from __future__ import annotations

from dataclasses import dataclass

NLI_LABELS = ("entailment", "neutral", "contradiction")


@dataclass(frozen=True)
class ScoredPair:
    """Two sentences and a gold similarity score (STS: 0-5; SICK: 1-5)."""

    sentence1: str
    sentence2: str
    score: float


@dataclass(frozen=True)
class LabeledPair:
    """Two sentences and a class label (NLI: entailment / neutral / contradiction; MRPC: 0 / 1)."""

    sentence1: str
    sentence2: str
    label: str


@dataclass(frozen=True)
class LabeledSentence:
    """One sentence and its class label (SentEval transfer tasks)."""

    text: str
    label: str


@dataclass(frozen=True)
class Triplet:
    """An anchor, a sentence close to it and one far from it."""

    anchor: str
    positive: str
    negative: str


@dataclass(frozen=True)
class NegativesTuple:
    """An anchor, a sentence close to it and several hard negatives (sentence-transformers' "n-tuple").

    ``sbert mine-negatives`` writes these; every row of one file has the same number of negatives,
    so that a batch of them has a fixed number of columns.
    """

    anchor: str
    positive: str
    negatives: tuple[str, ...]
