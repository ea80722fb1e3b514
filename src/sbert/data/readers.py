"""Readers that turn data-set files into plain typed records: STSb and SNLI (SentEval form).

Every reader stops at the first malformed line with a :class:`DataFormatError` naming the file and
line; with ``skip_bad_lines=True`` it skips such lines instead and logs how many it skipped.
"""

from __future__ import annotations

from pathlib import Path

from sbert.data.errors import BadLines, DataFormatError, utf8_lines
from sbert.data.paths import dataset_file
from sbert.data.records import NLI_LABELS, LabeledPair, ScoredPair

__all__ = ["DataFormatError", "parse_score", "read_snli_senteval", "read_stsb"]


def parse_score(text: str, low: float, high: float) -> float:
    """A gold score in ``[low, high]``; ``ValueError`` says what is wrong with it.

    Examples:
        >>> parse_score("4.20", 0, 5)
        4.2
    """
    try:
        score = float(text)
    except ValueError:
        raise ValueError(f"score {text!r} is not a number") from None
    if not low <= score <= high:  # also rejects NaN
        raise ValueError(f"score {score} is outside {low:g}-{high:g}")
    return score


STSB_SPLITS = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}


def read_stsb(
    split: str = "test", data_dir: str | Path | None = None, skip_bad_lines: bool = False
) -> list[ScoredPair]:
    """STS benchmark pairs with their 0-5 gold scores.

    The files are tab-separated without quoting; fields 5-7 are score, sentence1, sentence2, and
    some rows carry two extra trailing fields, which are ignored.
    """
    if split not in STSB_SPLITS:
        raise ValueError(f"unknown STSb split {split!r}; choose one of {', '.join(STSB_SPLITS)}")
    path = dataset_file(data_dir, f"stsb/original/{STSB_SPLITS[split]}", f"STSb {split}")
    pairs = []
    with BadLines(path, skip_bad_lines) as bad:
        for number, line in utf8_lines(path, bad):
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 7:
                bad.found(number, f"expected at least 7 tab-separated fields, got {len(fields)}")
                continue
            try:
                score = parse_score(fields[4], 0.0, 5.0)
            except ValueError as error:
                bad.found(number, str(error))
                continue
            pairs.append(ScoredPair(fields[5], fields[6], score))
    return pairs


SNLI_SPLITS = ("dev", "test")


def read_snli_senteval(
    split: str = "dev", data_dir: str | Path | None = None, skip_bad_lines: bool = False
) -> list[LabeledPair]:
    """SNLI in SentEval's three-file form: ``s1.<split>``, ``s2.<split>``, ``labels.<split>``, lines aligned."""
    if split not in SNLI_SPLITS:
        raise ValueError(
            f"unknown SNLI split {split!r}; SentEval's copy has {', '.join(SNLI_SPLITS)} (no train)"
        )
    files = [
        dataset_file(data_dir, f"snli_senteval/{name}.{split}", f"SNLI {split}")
        for name in ("s1", "s2", "labels")
    ]
    columns = [path.read_text(encoding="utf-8").splitlines() for path in files]
    if len({len(column) for column in columns}) != 1:
        counts = ", ".join(f"{path.name}: {len(column)}" for path, column in zip(files, columns))
        raise DataFormatError(files[2], 1, f"the three files are not aligned ({counts} lines)")
    pairs = []
    with BadLines(files[2], skip_bad_lines) as bad:
        for number, (s1, s2, label) in enumerate(zip(*columns), start=1):
            if label not in NLI_LABELS:
                bad.found(number, f"label {label!r} is not one of {', '.join(NLI_LABELS)}")
                continue
            pairs.append(LabeledPair(s1, s2, label))
    return pairs
