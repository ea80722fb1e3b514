"""SNLI and MultiNLI as users download them (JSONL), and NLI triplets built from NLI pairs."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from sbert.data.errors import BadLines, utf8_lines
from sbert.data.readers import DataFormatError, read_snli_senteval
from sbert.data.records import NLI_LABELS, LabeledPair, Triplet

# Pairs whose annotators did not agree carry the gold label "-"; the paper (as everyone) drops them.
NO_CONSENSUS = "-"


def read_nli_jsonl(path: str | Path, skip_bad_lines: bool = False) -> list[LabeledPair]:
    """Pairs of an SNLI or MultiNLI ``.jsonl`` release (``snli_1.0_train.jsonl``, ``multinli_1.0_train.jsonl``).

    Each line is an object with ``sentence1``, ``sentence2`` and ``gold_label``; lines labelled ``-``
    (no annotator consensus) are skipped, as in the paper.

    Args:
        path: The JSONL file.
        skip_bad_lines: Skip malformed lines (and log how many) instead of raising.

    Raises:
        DataFormatError: invalid JSON, a missing or empty sentence, or a label outside
            entailment / neutral / contradiction (names the file and line); or no pairs at all.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "snli.jsonl")
        >>> _ = open(path, "w").write('{"sentence1": "A man sleeps.", "sentence2": "A man rests.", '
        ...                           '"gold_label": "entailment"}\\n')
        >>> read_nli_jsonl(path)[0].label
        'entailment'
    """
    path = Path(path)
    pairs: list[LabeledPair] = []
    with BadLines(path, skip_bad_lines) as bad:
        for number, line in utf8_lines(path, bad):  # a line that is not UTF-8 is a bad line too
            if not line.strip():
                continue
            try:
                pair = _nli_pair(line, path, number)
            except DataFormatError as error:
                bad.found(number, error.problem)
                continue
            if pair is not None:
                pairs.append(pair)
    if not pairs:
        raise DataFormatError(path, 1, "no labelled pairs in the file")
    return pairs


def _nli_pair(line: str, path: Path, number: int) -> LabeledPair | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise DataFormatError(path, number, f"not valid JSON: {error.msg}") from None
    if not isinstance(record, dict):
        raise DataFormatError(path, number, "expected a JSON object")
    label = record.get("gold_label")
    if label == NO_CONSENSUS:
        return None
    if label not in NLI_LABELS:
        raise DataFormatError(path, number, f"gold_label {label!r} is not one of {', '.join(NLI_LABELS)}")
    sentences: list[str] = []
    for key in ("sentence1", "sentence2"):
        sentence = record.get(key)
        if not isinstance(sentence, str) or not sentence.strip():
            raise DataFormatError(path, number, f"{key} is missing or empty")
        sentences.append(sentence)
    return LabeledPair(sentences[0], sentences[1], label)


def nli_triplets(pairs: Sequence[LabeledPair]) -> list[Triplet]:
    """Triplets (premise, entailed hypothesis, contradicting hypothesis) from NLI pairs.

    Every entailment hypothesis of a premise is paired with every contradiction hypothesis of the same
    premise (SNLI has about one of each per premise), in the order the pairs come.

    Raises:
        ValueError: no premise has both an entailment and a contradiction.

    Examples:
        >>> pairs = [LabeledPair("A man sleeps.", "A man rests.", "entailment"),
        ...          LabeledPair("A man sleeps.", "A man runs.", "contradiction")]
        >>> nli_triplets(pairs)
        [Triplet(anchor='A man sleeps.', positive='A man rests.', negative='A man runs.')]
    """
    by_premise: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for pair in pairs:
        by_premise[pair.sentence1][pair.label].append(pair.sentence2)
    triplets = [
        Triplet(premise, positive, negative)
        for premise, hypotheses in by_premise.items()
        for positive in hypotheses["entailment"]
        for negative in hypotheses["contradiction"]
    ]
    if not triplets:
        raise ValueError("no premise has both an entailment and a contradiction hypothesis: no triplets")
    return triplets


def distinct_snli_sentences(count: int, data_dir: str | Path | None = None) -> list[str]:
    """The first ``count`` distinct sentences of SNLI test, then dev (SentEval's copy), in file order.

    A corpus of real, varied sentences for mining and speed measurements.

    Raises:
        ValueError: fewer than ``count`` distinct sentences exist.
    """
    seen: dict[str, None] = {}
    for split in ("test", "dev"):
        for pair in read_snli_senteval(split, data_dir):
            seen.setdefault(pair.sentence1)
            seen.setdefault(pair.sentence2)
    if len(seen) < count:
        raise ValueError(f"only {len(seen)} distinct SNLI sentences, asked for {count}")
    return list(seen)[:count]
