"""Readers that turn data-set files into plain typed records."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sbert.data.paths import dataset_file


class DataFormatError(ValueError):
    """A malformed line in a data file; the message names the file and the line number."""

    def __init__(self, path: Path | str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path, self.line, self.problem = Path(path), line, problem


@dataclass(frozen=True)
class ScoredPair:
    """Two sentences and a gold similarity score."""

    sentence1: str
    sentence2: str
    score: float


STSB_SPLITS = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}


def read_stsb(split: str = "test", data_dir: str | Path | None = None) -> list[ScoredPair]:
    """STS benchmark pairs with their 0-5 gold scores.

    The files are tab-separated without quoting; fields 5-7 are score, sentence1, sentence2, and
    some rows carry two extra trailing fields, which are ignored.
    """
    if split not in STSB_SPLITS:
        raise ValueError(f"unknown STSb split {split!r}; choose one of {', '.join(STSB_SPLITS)}")
    path = dataset_file(data_dir, f"stsb/original/{STSB_SPLITS[split]}", f"STSb {split}")
    pairs = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 7:
                raise DataFormatError(
                    path, number, f"expected at least 7 tab-separated fields, got {len(fields)}"
                )
            try:
                score = float(fields[4])
            except ValueError:
                raise DataFormatError(path, number, f"score {fields[4]!r} is not a number") from None
            if not 0.0 <= score <= 5.0:
                raise DataFormatError(path, number, f"score {score} is outside 0-5")
            pairs.append(ScoredPair(fields[5], fields[6], score))
    return pairs
