"""Users' own training files: pairs with a score or a label, and triplets, as CSV, TSV or JSONL.

CSV and TSV files need a header row naming the columns; JSONL lines are objects with those keys.
Pairs: ``sentence1``, ``sentence2`` and ``score`` (a number in ``score_range``) or ``label``.
Triplets: ``anchor``, ``positive``, ``negative``; with several hard negatives (as ``sbert
mine-negatives`` writes them): ``anchor``, ``positive``, ``negative_1`` ... ``negative_k``.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sbert.base import json_text
from sbert.base.options import TRAINING_FORMATS
from sbert.data.readers import DataFormatError
from sbert.data.records import LabeledPair, NegativesTuple, ScoredPair, Triplet

logger = logging.getLogger("sbert")

Record = TypeVar("Record")


def read_scored_pairs(
    path: str | Path,
    score_range: tuple[float, float] = (0.0, 5.0),
    fmt: str = "auto",
    skip_bad_lines: bool = False,
) -> list[ScoredPair]:
    """Pairs with a gold similarity ``score`` inside ``score_range``; a file without a ``score``
    column gives it as a numeric ``label`` (as ``sbert mine-negatives --output-format labeled-pair``
    writes: 1 for a positive, 0 for a negative).

    Raises:
        DataFormatError: a missing or empty sentence, a score that is not a number or is out of range
            (names the file and line), or an empty file.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "pairs.csv")
        >>> _ = open(path, "w").write("sentence1,sentence2,score\\nA man sleeps.,A man rests.,4.5\\n")
        >>> read_scored_pairs(path)
        [ScoredPair(sentence1='A man sleeps.', sentence2='A man rests.', score=4.5)]
    """
    low, high = score_range

    def build(row: dict[str, Any]) -> ScoredPair:
        first, second = _texts(row, ("sentence1", "sentence2"))
        column = "score" if "score" in row or "label" not in row else "label"
        raw = row.get(column)
        try:
            score = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"{column} {raw!r} is not a number") from None
        if not low <= score <= high:
            raise ValueError(f"{column} {score:g} is outside {low:g}-{high:g}")
        return ScoredPair(first, second, score)

    return _read(path, fmt, build, skip_bad_lines)


def read_labeled_pairs(
    path: str | Path,
    labels: Sequence[str] | None = None,
    fmt: str = "auto",
    skip_bad_lines: bool = False,
) -> list[LabeledPair]:
    """Pairs with a class ``label``; with ``labels`` given, any other label is an error.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "pairs.jsonl")
        >>> _ = open(path, "w").write('{"sentence1": "a", "sentence2": "b", "label": "neutral"}\\n')
        >>> read_labeled_pairs(path, labels=["entailment", "neutral", "contradiction"])[0].label
        'neutral'
    """

    def build(row: dict[str, Any]) -> LabeledPair:
        first, second = _texts(row, ("sentence1", "sentence2"))
        label = row.get("label")
        if label is None or str(label).strip() == "":
            raise ValueError("label is missing")
        label = str(label).strip()
        if labels is not None and label not in labels:
            raise ValueError(f"label {label!r} is not one of {', '.join(labels)}")
        return LabeledPair(first, second, label)

    return _read(path, fmt, build, skip_bad_lines)


def read_triplets(path: str | Path, fmt: str = "auto", skip_bad_lines: bool = False) -> list[Triplet]:
    """Triplets with ``anchor``, ``positive`` and ``negative`` columns.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "triplets.tsv")
        >>> _ = open(path, "w").write("anchor\\tpositive\\tnegative\\na\\tb\\tc\\n")
        >>> read_triplets(path)
        [Triplet(anchor='a', positive='b', negative='c')]
    """

    def build(row: dict[str, Any]) -> Triplet:
        if "negative" not in row and negative_columns(row):
            raise ValueError(
                "this row has negative_1 ... columns (several negatives) but the triplet loss takes one "
                "negative column: train with --loss mnrl, or mine with --output-format triplet"
            )
        return Triplet(*_texts(row, ("anchor", "positive", "negative")))

    return _read(path, fmt, build, skip_bad_lines)


def read_negatives_tuples(
    path: str | Path, fmt: str = "auto", skip_bad_lines: bool = False
) -> list[NegativesTuple]:
    """Rows of ``anchor``, ``positive``, ``negative_1`` ... ``negative_k``, the same k on every row.

    Raises:
        DataFormatError: a missing or empty text, or a row with another number of negatives than the
            first (names the file and line).

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "mined.tsv")
        >>> _ = open(path, "w").write("anchor\\tpositive\\tnegative_1\\tnegative_2\\na\\tb\\tc\\td\\n")
        >>> read_negatives_tuples(path)
        [NegativesTuple(anchor='a', positive='b', negatives=('c', 'd'))]
    """
    path = Path(path)
    first = next(_rows(path, _format(path, fmt)), None)
    try:
        expected = negative_columns(first[1]) if first else []
    except ValueError as error:
        raise DataFormatError(path, first[0] if first else 1, str(error)) from None

    def build(row: dict[str, Any]) -> NegativesTuple:
        columns = negative_columns(row)
        if len(columns) != len(expected):
            raise ValueError(
                f"{len(columns)} negative columns, but the first row has {len(expected)}: every row "
                "needs the same number"
            )
        anchor, positive, *negatives = _texts(row, ("anchor", "positive", *expected))
        return NegativesTuple(anchor, positive, tuple(negatives))

    return _read(path, fmt, build, skip_bad_lines)


def negative_columns(row: dict[str, Any]) -> list[str]:
    """The row's ``negative_1`` ... ``negative_k`` keys in order (empty when it has none).

    Raises:
        ValueError: numbered negatives with a gap (``negative_1``, ``negative_3``).
    """
    numbers = sorted(int(match[1]) for key in row if (match := re.fullmatch(r"negative_(\d+)", str(key))))
    if numbers != list(range(1, len(numbers) + 1)):
        names = ", ".join(f"negative_{n}" for n in numbers)
        raise ValueError(f"negative columns must be negative_1 ... negative_k without gaps, got {names}")
    return [f"negative_{n}" for n in numbers]


def read_anchor_positive_pairs(
    path: str | Path, fmt: str = "auto", skip_bad_lines: bool = False
) -> list[tuple[str, str]]:
    """(anchor, positive) pairs from ``anchor``/``positive`` or ``sentence1``/``sentence2`` columns
    (other columns, such as a label or negatives, are ignored): the input of hard-negative mining.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "pairs.csv")
        >>> _ = open(path, "w").write("sentence1,sentence2,label\\nA man sleeps.,A man rests.,entailment\\n")
        >>> read_anchor_positive_pairs(path)
        [('A man sleeps.', 'A man rests.')]
    """
    first = next(_rows(Path(path), _format(Path(path), fmt)), None)
    keys = (
        ("anchor", "positive") if first is not None and "anchor" in first[1] else ("sentence1", "sentence2")
    )

    def build(row: dict[str, Any]) -> tuple[str, str]:
        anchor, positive = _texts(row, keys)
        return anchor, positive

    return _read(path, fmt, build, skip_bad_lines)


# Labels that mark a positive pair (an NLI entailment, a mined labeled-pair's 1); no label counts too.
POSITIVE_LABELS = frozenset({"", "1", "1.0", "true", "positive", "entailment"})


def read_positive_pairs_or_triplets(
    path: str | Path, fmt: str = "auto", skip_bad_lines: bool = False
) -> list[LabeledPair] | list[Triplet] | list[NegativesTuple]:
    """Positive pairs (``sentence1``, ``sentence2``, a ``label`` kept if it marks a positive: see
    ``POSITIVE_LABELS``; or ``anchor``, ``positive``), triplets (with a ``negative`` column), or
    :class:`NegativesTuple` rows (``negative_1`` ...).

    For in-batch-negative losses: a pair needs no score, a triplet adds a hard negative, a tuple k.
    """
    first = next(_rows(Path(path), _format(Path(path), fmt)), None)
    if first is not None and "anchor" in first[1]:
        if "negative" in first[1]:
            return read_triplets(path, fmt, skip_bad_lines)
        if any(str(key).startswith("negative_") for key in first[1]):
            return read_negatives_tuples(path, fmt, skip_bad_lines)
        pairs = read_anchor_positive_pairs(path, fmt, skip_bad_lines)
        return [LabeledPair(anchor, positive, "") for anchor, positive in pairs]

    def build(row: dict[str, Any]) -> LabeledPair:
        first, second = _texts(row, ("sentence1", "sentence2"))
        label = "" if row.get("label") is None else str(row["label"]).strip()
        if label.lower() not in POSITIVE_LABELS:
            # A negative pair read as a positive would teach the opposite of what the file says.
            raise ValueError(
                f"label {label!r} marks a pair that is not a positive; in-batch-negative losses take "
                "positive pairs only: leave such rows out, or train a labeled-pair file with --loss cosent"
            )
        return LabeledPair(first, second, label)

    return _read(path, fmt, build, skip_bad_lines)


def check_training_output(path: str | Path) -> None:
    """Refuse, before any work, an output path whose format cannot be told or whose folder is missing."""
    path = Path(path)
    _format(path, "auto")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path}: the folder {path.parent} does not exist")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder: give a file name ending .csv, .tsv or .jsonl")


def write_training_file(
    path: str | Path, header: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "auto"
) -> None:
    """Write rows of texts under ``header`` as CSV, TSV or JSONL (by extension), atomically.

    JSONL keeps each value as its JSON type (a number, a list); CSV and TSV take texts.

    Raises:
        ValueError: a TSV text holding a tab or a line break (TSV has no quoting: use CSV or JSONL).

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "triplets.jsonl")
        >>> write_training_file(path, ["anchor", "positive", "negative"], [["a", "b", "c"]])
        >>> read_triplets(path)
        [Triplet(anchor='a', positive='b', negative='c')]
    """
    from sbert.base.files import write_text_atomic

    path = Path(path)
    fmt = _format(path, fmt)
    if fmt == "jsonl":
        lines = [json_text.dumps(dict(zip(header, row)), ensure_ascii=False) + "\n" for row in rows]
        write_text_atomic(path, "".join(lines))
        return
    if fmt == "tsv":
        for number, row in enumerate(rows, start=2):
            if any(("\t" in text or "\n" in text or "\r" in text) for text in row):
                raise ValueError(
                    f"{path}: line {number} would hold a tab or a line break, which TSV cannot hold; write .csv or .jsonl"
                )
        # The reader takes TSV without quoting (a '"' is text), so it is written as plain joined fields.
        write_text_atomic(path, "".join("\t".join(line) + "\n" for line in [header, *rows]))
        return
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    write_text_atomic(path, buffer.getvalue())


def _texts(row: dict[str, Any], keys: Sequence[str]) -> list[str]:
    texts = []
    for key in keys:
        value = row.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{key} is missing or empty")
        texts.append(value)
    return texts


def _read(
    path: str | Path, fmt: str, build: Callable[[dict[str, Any]], Record], skip_bad_lines: bool
) -> list[Record]:
    path = Path(path)
    records: list[Record] = []
    skipped = 0
    for number, row in _rows(path, _format(path, fmt)):
        try:
            check_utf8(row)  # a line of other bytes is a bad line too: skipped with the others
            records.append(build(row))
        except ValueError as error:
            if not skip_bad_lines:
                raise DataFormatError(path, number, str(error)) from None
            skipped += 1
    if skipped:
        logger.warning("%s: skipped %d bad lines", path, skipped)
    if not records:
        raise DataFormatError(path, 1, "no examples in the file (an empty data set)")
    return records


def training_file_format(path: str | Path, fmt: str = "auto") -> str:
    """``csv``, ``tsv`` or ``jsonl``: ``fmt``, or with ``auto`` the one ``path``'s extension names.

    Raises:
        ValueError: an unknown ``fmt``, or an extension that names none of them.

    Examples:
        >>> training_file_format("mined.ndjson")
        'jsonl'
    """
    return _format(Path(path), fmt)


def _format(path: Path, fmt: str) -> str:
    if fmt not in TRAINING_FORMATS:
        raise ValueError(f"unknown training file format {fmt!r}; choose one of {', '.join(TRAINING_FORMATS)}")
    if fmt != "auto":
        return fmt
    suffix = path.suffix.lower().lstrip(".")
    formats = {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl", "ndjson": "jsonl"}
    if suffix not in formats:
        raise ValueError(f"{path}: cannot tell the format from the extension; pass csv, tsv or jsonl")
    return formats[suffix]


def _rows(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row as a dict) for every non-blank row; bytes that are not UTF-8 are left as
    surrogate escapes for :func:`check_utf8` (a bad line, skipped with ``skip_bad_lines``).

    Raises:
        DataFormatError: a malformed row (naming the line).
    """
    yield from _decoded_rows(path, fmt)


def check_utf8(row: Any) -> None:
    """Raise ``ValueError`` naming the bytes where a text of ``row`` (its keys, values, lists) was
    not UTF-8 (read with ``errors="surrogateescape"``).

    Examples:
        >>> check_utf8({"sentence1": "Caf" + b"\\xe9".decode("utf-8", "surrogateescape")})
        Traceback (most recent call last):
        ...
        ValueError: not valid UTF-8 (bytes e9 in 'Caf\\udce9')
    """
    texts = [*row.keys(), *row.values()] if isinstance(row, dict) else row if isinstance(row, list) else [row]
    for text in texts:
        if isinstance(text, (dict, list)):
            check_utf8(text)
        elif isinstance(text, str) and (escaped := _ESCAPED.search(text)):
            raw = escaped.group().encode("utf-8", "surrogateescape").hex(" ")
            raise ValueError(f"not valid UTF-8 (bytes {raw} in {text!r:.60})")


_ESCAPED = re.compile("[\udc80-\udcff]+")  # undecodable bytes under errors="surrogateescape"


def _decoded_rows(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    # Bytes that are not UTF-8 come through as surrogate escapes: check_utf8 judges their row alone.
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as handle:
        if fmt == "jsonl":
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DataFormatError(path, number, f"not valid JSON: {error.msg}") from None
                if not isinstance(record, dict):
                    raise DataFormatError(path, number, "expected a JSON object")
                yield number, record
            return
        # TSV is read without quoting, so a '"' is plain text (as in STSb); CSV follows RFC 4180.
        if fmt == "csv":
            reader = csv.DictReader(handle, delimiter=",")
        else:
            reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        if reader.fieldnames is None:
            raise DataFormatError(path, 1, "empty file: expected a header row")
        for row in reader:
            if any(value for value in row.values()):
                yield reader.line_num, row
