"""Readers for the STS 2012-2016 test sets and SICK (SemEval 2014 split), as scored sentence pairs.

STS12-16 come in two forms: ``original`` (the default: the text as first released, which MTEB's
copies hold) and ``senteval`` (tokenized and lower-cased by SentEval). In both, line i of
``*.input.<subset>.txt`` pairs with line i of ``*.gs.<subset>.txt``; a blank gold line marks an
unscored pair, which is skipped.
"""

from __future__ import annotations

from pathlib import Path

from sbert.data.errors import BadLines, DataFormatError
from sbert.data.paths import dataset_file
from sbert.data.readers import parse_score
from sbert.data.records import ScoredPair

# The subsets SentEval scores. STS13's SMT subset is left out everywhere: its gold file ships but its
# input is licensed and missing; STS12's ``STS.gs.ALL.txt`` is the concatenation of the others.
STS_SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
STS_SOURCES = ("original", "senteval")


def read_sts(
    name: str,
    data_dir: str | Path | None = None,
    source: str = "original",
    skip_bad_lines: bool = False,
) -> dict[str, list[ScoredPair]]:
    """The scored pairs of one STS year (``"STS12"`` ... ``"STS16"``), by subset.

    Args:
        name: ``STS12``, ``STS13``, ``STS14``, ``STS15`` or ``STS16``.
        data_dir: The data directory (default ``$SBERT_DATA``).
        source: ``original`` (first-release text, the default) or ``senteval`` (tokenized, lower-cased).
        skip_bad_lines: Skip malformed lines (and log how many) instead of raising.

    Returns:
        ``{subset: pairs}`` in SentEval's subset order; pool them for the "all" score.

    Examples:
        >>> subsets = read_sts("STS16", "../shared/data")
        >>> sum(len(pairs) for pairs in subsets.values())
        1186
    """
    if name not in STS_SUBSETS:
        raise ValueError(f"unknown STS set {name!r}; choose one of {', '.join(STS_SUBSETS)}")
    if source not in STS_SOURCES:
        raise ValueError(f"unknown STS source {source!r}; choose one of {', '.join(STS_SOURCES)}")
    folder = f"sts12-16/original/{name}-en-test" if source == "original" else f"sts12-16/{name}-en-test"
    # The original STS16 release names its files STS2016.* and adds two source-name fields per line.
    original16 = source == "original" and name == "STS16"
    prefix = "STS2016" if original16 else "STS"
    fields = 4 if original16 else 2
    subsets = {}
    for subset in STS_SUBSETS[name]:
        inputs = dataset_file(data_dir, f"{folder}/{prefix}.input.{subset}.txt", f"{name} {subset}")
        gold = dataset_file(data_dir, f"{folder}/{prefix}.gs.{subset}.txt", f"{name} {subset}")
        subsets[subset] = read_sts_files(inputs, gold, fields, skip_bad_lines)
    return subsets


def read_sts_files(
    inputs: Path, gold: Path, fields: int = 2, skip_bad_lines: bool = False
) -> list[ScoredPair]:
    """Pairs from an STS input file (``fields`` tab-separated, the first two are the sentences) and
    its gold-score file (0-5, one a line; blank: unscored, skipped)."""
    input_lines = inputs.read_text(encoding="utf-8").splitlines()
    gold_lines = gold.read_text(encoding="utf-8").splitlines()
    if len(input_lines) != len(gold_lines):
        raise DataFormatError(
            gold,
            min(len(input_lines), len(gold_lines)) + 1,
            f"{len(gold_lines)} gold lines but {len(input_lines)} input lines in {inputs.name}",
        )
    pairs = []
    with BadLines(inputs, skip_bad_lines) as bad_input, BadLines(gold, skip_bad_lines) as bad_gold:
        for number, (line, score_text) in enumerate(zip(input_lines, gold_lines), start=1):
            if not score_text.strip():
                continue
            try:
                score = parse_score(score_text.strip(), 0.0, 5.0)
            except ValueError as error:
                bad_gold.found(number, str(error))
                continue
            parts = line.split("\t")
            if len(parts) != fields:
                bad_input.found(number, f"expected {fields} tab-separated fields, got {len(parts)}")
                continue
            if not parts[0].strip() or not parts[1].strip():
                bad_input.found(number, "empty sentence in a scored pair")
                continue
            pairs.append(ScoredPair(parts[0], parts[1], score))
    return pairs


SICK_SPLITS = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def read_sick(
    split: str = "test", data_dir: str | Path | None = None, skip_bad_lines: bool = False
) -> list[ScoredPair]:
    """SICK pairs with their 1-5 relatedness scores (SICK-R), in the SemEval 2014 split.

    The files have a header line and five tab-separated fields: pair_ID, sentence_A, sentence_B,
    relatedness_score, entailment_judgment.

    Examples:
        >>> len(read_sick("test", "../shared/data"))
        4927
    """
    if split not in SICK_SPLITS:
        raise ValueError(f"unknown SICK split {split!r}; choose one of {', '.join(SICK_SPLITS)}")
    path = dataset_file(data_dir, f"sick/senteval/{SICK_SPLITS[split]}", f"SICK {split}")
    pairs = []
    with BadLines(path, skip_bad_lines) as bad:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            fields = line.split("\t")
            if number == 1:
                if fields[:4] != ["pair_ID", "sentence_A", "sentence_B", "relatedness_score"]:
                    raise DataFormatError(path, 1, f"not a SICK header: {line[:80]!r}")
                continue
            if len(fields) != 5:
                bad.found(number, f"expected 5 tab-separated fields, got {len(fields)}")
                continue
            try:
                score = parse_score(fields[3], 1.0, 5.0)
            except ValueError as error:
                bad.found(number, str(error))
                continue
            pairs.append(ScoredPair(fields[1], fields[2], score))
    return pairs
