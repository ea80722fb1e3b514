"""Read a list of sentences from a text, JSONL or CSV file (or standard input)."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from sbert.data.readers import DataFormatError

TEXT_FORMATS = ("auto", "txt", "jsonl", "csv", "tsv")


def read_texts(source: str | Path, fmt: str = "auto", column: str = "text") -> list[str]:
    """Sentences from ``source`` (``"-"`` is standard input).

    Args:
        source: A path, or ``"-"``.
        fmt: ``txt`` (one sentence per line, every line kept), ``jsonl`` (objects with ``column``, or
            plain strings), ``csv``/``tsv`` (a header row naming ``column``); ``auto`` picks by extension.
        column: The field holding the sentence in JSONL and CSV.

    Raises:
        DataFormatError: a line lacks the column or is not valid JSON (names the file and line).
    """
    if fmt not in TEXT_FORMATS:
        raise ValueError(f"unknown input format {fmt!r}; choose one of {', '.join(TEXT_FORMATS)}")
    name = "<stdin>" if str(source) == "-" else str(source)
    if fmt == "auto":
        suffix = Path(name).suffix.lower().lstrip(".")
        fmt = {"jsonl": "jsonl", "ndjson": "jsonl", "csv": "csv", "tsv": "tsv"}.get(suffix, "txt")
    text = sys.stdin.read() if name == "<stdin>" else Path(source).read_text(encoding="utf-8")
    if fmt == "txt":
        return text.splitlines()
    if fmt == "jsonl":
        return _read_jsonl(text, name, column)
    return _read_table(text, name, column, delimiter="," if fmt == "csv" else "\t")


def _read_jsonl(text: str, name: str, column: str) -> list[str]:
    texts = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataFormatError(name, number, f"not valid JSON: {error.msg}") from None
        value = record.get(column) if isinstance(record, dict) else record
        if not isinstance(value, str):
            raise DataFormatError(name, number, f"no string field {column!r}")
        texts.append(value)
    return texts


def _read_table(text: str, name: str, column: str, delimiter: str) -> list[str]:
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    if reader.fieldnames is None or column not in reader.fieldnames:
        raise DataFormatError(name, 1, f"header has no column {column!r} (columns: {reader.fieldnames})")
    texts = []
    for row in reader:
        value = row.get(column)
        if value is None:
            raise DataFormatError(name, reader.line_num, f"row has no value for column {column!r}")
        texts.append(value)
    return texts
