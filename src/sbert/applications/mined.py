"""What hard-negative mining found (:class:`MiningResult`), its rows in each of sentence-transformers'
output formats, and the training file they are written to (:func:`write_mined`).

The formats, as sentence-transformers' ``mine_hard_negatives`` lays them out:

- ``n-tuple``: ``anchor, positive, negative_1 ... negative_k``, a row per (anchor, positive) that got
  all k negatives;
- ``triplet``: ``anchor, positive, negative``, a row per negative;
- ``labeled-pair``: ``sentence1, sentence2, label``: for each anchor, a row per positive (label 1),
  then a row per negative it got (label 0);
- ``labeled-list``: ``anchor, passages, labels``: a row per (anchor, positive) that got a negative,
  the positive first (label 1), then its negatives (label 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sbert.data.records import NegativesTuple, ScoredPair, Triplet
from sbert.data.training_files import training_file_format, write_training_file


@dataclass(frozen=True)
class MinedRow:
    """One anchor, one of its positives, its negatives best first, and the scores of each."""

    anchor: str
    positive: str
    negatives: tuple[str, ...]
    positive_score: float
    negative_scores: tuple[float, ...]


@dataclass
class MiningResult:
    """What :func:`~sbert.applications.hard_negatives.mine_hard_negatives` found.

    Attributes:
        rows: One per (anchor, positive) with ``n-tuple`` (only those with ``num_negatives``
            negatives), ``labeled-list`` (those with at least one) and ``labeled-pair`` (all, with the
            negatives found, the same for every positive of an anchor); one per (anchor, positive,
            negative) with ``triplet``. :meth:`table` lays them out as the file's rows.
        output_format: ``n-tuple``, ``triplet``, ``labeled-pair`` or ``labeled-list``.
        num_negatives: Negatives asked for per anchor.
        range_max: The candidates ranked per anchor (given, or derived as sentence-transformers does).
        skipped: Candidates removed by each filter (``absolute_margin``, ``max_score``, ...).
        missing: Rows (n-tuple) or negatives (the other formats) that could not be filled.
        seconds: ``encode``, ``search``, ``rescore`` (cross-encoder) and ``select``.
    """

    rows: list[MinedRow]
    output_format: str
    num_negatives: int
    range_max: int
    skipped: dict[str, int] = field(default_factory=dict)
    missing: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def header(self) -> list[str]:
        """The columns of :meth:`table` (and of the file :func:`write_mined` writes)."""
        if self.output_format == "triplet":
            return ["anchor", "positive", "negative"]
        if self.output_format == "labeled-pair":
            # The names `sbert train file` reads pairs by (the label read as a 0-1 score by cosent).
            return ["sentence1", "sentence2", "label"]
        if self.output_format == "labeled-list":
            return ["anchor", "passages", "labels"]
        return ["anchor", "positive", *(f"negative_{i}" for i in range(1, self.num_negatives + 1))]

    def table(self) -> list[tuple[Any, ...]]:
        """The rows as sentence-transformers' dataset holds them, in its order (see the module).

        Examples:
            >>> row = MinedRow("a dog", "a puppy", ("a cat", "a car"), 0.9, (0.5, 0.2))
            >>> MiningResult([row], "labeled-pair", 2, 5).table()
            [('a dog', 'a puppy', 1), ('a dog', 'a cat', 0), ('a dog', 'a car', 0)]
            >>> MiningResult([row], "labeled-list", 2, 5).table()
            [('a dog', ['a puppy', 'a cat', 'a car'], [1, 0, 0])]
        """
        if self.output_format == "labeled-list":
            return [
                (row.anchor, [row.positive, *row.negatives], [1] + [0] * len(row.negatives))
                for row in self.rows
            ]
        if self.output_format != "labeled-pair":
            return [(row.anchor, row.positive, *row.negatives) for row in self.rows]
        table: list[tuple[Any, ...]] = []
        # An anchor's rows are adjacent and share its negatives: its positives, then those once.
        for start, end in _anchor_runs(self.rows):
            table += [(row.anchor, row.positive, 1) for row in self.rows[start:end]]
            first = self.rows[start]
            table += [(first.anchor, negative, 0) for negative in first.negatives]
        return table

    def examples(self) -> list[NegativesTuple] | list[Triplet] | list[ScoredPair]:
        """The rows as training records: :class:`NegativesTuple` (n-tuple), :class:`Triplet`, or
        :class:`ScoredPair` with score 1.0 or 0.0 (labeled-pair, for CoSENT or a 0-1 cosine loss).

        Raises:
            ValueError: the labeled-list format, which no loss here trains on (write it with
                :func:`write_mined` for a listwise trainer).
        """
        if self.output_format == "triplet":
            return [Triplet(row.anchor, row.positive, row.negatives[0]) for row in self.rows]
        if self.output_format == "labeled-pair":
            return [ScoredPair(anchor, text, float(label)) for anchor, text, label in self.table()]
        if self.output_format == "labeled-list":
            raise ValueError(
                "no sbert loss trains on labeled lists: mine labeled-pair for a pair loss or n-tuple for "
                "MNRL, or write the lists with write_mined for a listwise trainer"
            )
        return [NegativesTuple(row.anchor, row.positive, row.negatives) for row in self.rows]

    def summary(self) -> str:
        """Counts and mean scores of positives and negatives, and what each filter removed."""
        positives = np.array([row.positive_score for row in self.rows])
        if self.output_format == "labeled-pair":  # each anchor's negatives once, as the file has them
            scores = [self.rows[start].negative_scores for start, _ in _anchor_runs(self.rows)]
        else:
            scores = [row.negative_scores for row in self.rows]
        negatives = np.array([score for row in scores for score in row])
        lines = [f"{len(self.table())} rows ({self.output_format}), {len(negatives)} negatives"]
        if len(negatives):
            lines.append(
                f"mean score: positive {positives.mean():.4f}, negative {negatives.mean():.4f}, "
                f"difference {positives.mean() - negatives.mean():.4f}"
            )
        lines += [f"skipped {count} candidates for {name}" for name, count in self.skipped.items() if count]
        if self.missing:
            unit = "rows" if self.output_format == "n-tuple" else "negatives"
            lines.append(
                f"could not fill {self.missing} {unit}: widen range_max, or relax range_min and the filters"
            )
        return "\n".join(lines)


def _anchor_runs(rows: list[MinedRow]) -> list[tuple[int, int]]:
    """(start, end) of each run of rows with the same anchor."""
    starts = [i for i, row in enumerate(rows) if i == 0 or row.anchor != rows[i - 1].anchor]
    return list(zip(starts, [*starts[1:], len(rows)]))


def check_mined_output(path: str | Path, output_format: str, fmt: str = "auto") -> None:
    """Refuse, before any mining, a file type that cannot hold ``output_format``'s rows.

    Raises:
        ValueError: ``labeled-list`` into CSV or TSV (its passages and labels are lists: write JSONL).
    """
    if output_format == "labeled-list" and training_file_format(path, fmt) != "jsonl":
        raise ValueError(
            f"{path}: labeled-list rows hold lists of passages and labels, which CSV and TSV cannot "
            "hold: write .jsonl"
        )


def write_mined(result: MiningResult, path: str | Path, fmt: str = "auto") -> None:
    """Write the rows as a training file, CSV, TSV or JSONL (by extension), with
    :meth:`MiningResult.header`'s columns: ``anchor``, ``positive``, then ``negative`` (triplet) or
    ``negative_1`` ... ``negative_k`` (n-tuple); ``sentence1, sentence2, label`` (labeled-pair, which
    ``sbert train file --loss cosent`` reads as 0-1 scores); ``anchor, passages, labels`` (labeled-list,
    JSON lists, JSONL only).

    Raises:
        ValueError: labeled-list into CSV or TSV, or a TSV text holding a tab or a line break.

    Examples:
        >>> import os, tempfile
        >>> row = MinedRow("a dog", "a puppy", ("a cat", "a car"), 0.9, (0.5, 0.2))
        >>> path = os.path.join(tempfile.mkdtemp(), "mined.tsv")
        >>> write_mined(MiningResult([row], "n-tuple", 2, 5), path)
        >>> open(path).read().splitlines()[0].split("\\t")
        ['anchor', 'positive', 'negative_1', 'negative_2']
        >>> path = os.path.join(tempfile.mkdtemp(), "mined.jsonl")
        >>> write_mined(MiningResult([row], "labeled-list", 2, 5), path)
        >>> open(path).read()
        '{"anchor": "a dog", "passages": ["a puppy", "a cat", "a car"], "labels": [1, 0, 0]}\\n'
    """
    check_mined_output(path, result.output_format, fmt)
    header, table = result.header(), result.table()
    if training_file_format(path, fmt) != "jsonl":
        table = [tuple(str(value) for value in row) for row in table]  # labels as CSV/TSV text
    write_training_file(path, header, table, fmt)
