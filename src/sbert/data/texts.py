"""Sentences from a text, JSONL, CSV/TSV or Parquet file (or standard input), read incrementally.

:func:`iter_texts` yields one ``(line, id, text)`` row at a time, so a corpus of any size streams
through in bounded memory; :func:`read_texts` is the same as a list, for small inputs. Bytes are
decoded line by line as strict UTF-8, from a file and from standard input alike, so an invalid line
is reported with its file and line number instead of turning into replacement characters.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sbert.data.errors import BadLines, DataFormatError, decode_line

TEXT_FORMATS = ("auto", "txt", "jsonl", "csv", "tsv", "parquet")
STDIN = "-"
_SUFFIX_FORMATS = {"jsonl": "jsonl", "ndjson": "jsonl", "csv": "csv", "tsv": "tsv", "parquet": "parquet"}

# (line number, id from the id column or None, text); Parquet rows count from 1 like lines.
TextRow = tuple[int, "int | None", str]


@dataclass(frozen=True)
class InputFingerprint:
    """What identifies an input file: its size, SHA-256 and newline count (a row estimate for progress)."""

    size: int
    sha256: str
    lines: int


def resolve_format(source: str | Path, fmt: str = "auto") -> str:
    """``fmt``, or the format its extension implies (``txt`` for anything unknown and for stdin)."""
    if fmt not in TEXT_FORMATS:
        raise ValueError(f"unknown input format {fmt!r}; choose one of {', '.join(TEXT_FORMATS)}")
    if fmt != "auto":
        return fmt
    return _SUFFIX_FORMATS.get(Path(str(source)).suffix.lower().lstrip("."), "txt")


def read_texts(
    source: str | Path, fmt: str = "auto", column: str = "text", skip_bad_lines: bool = False
) -> list[str]:
    """Sentences from ``source`` (``"-"`` is standard input) as a list; see :func:`iter_texts`.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "s.txt")
        >>> _ = open(path, "w").write("one\\n\\nthree\\n")
        >>> read_texts(path)
        ['one', '', 'three']
    """
    return [text for _, _, text in iter_texts(source, fmt, column, skip_bad_lines=skip_bad_lines)]


def iter_texts(
    source: str | Path,
    fmt: str = "auto",
    column: str = "text",
    id_column: str | None = None,
    skip_bad_lines: bool = False,
    bad: BadLines | None = None,
) -> Iterator[TextRow]:
    """Rows of ``source``, one at a time.

    Args:
        source: A path, a URI pyarrow can open (``s3://...``), or ``"-"`` for standard input.
        fmt: ``txt`` (one sentence per line, every line kept, empty ones too), ``jsonl`` (objects with
            ``column``, or plain strings; blank lines skipped), ``csv``/``tsv`` (a header row naming
            ``column``), ``parquet`` (a string column); ``auto`` picks by extension.
        column: The field holding the sentence in JSONL, CSV and Parquet.
        id_column: A field holding an integer id per row (JSONL, CSV, Parquet); ``None``: no ids.
        skip_bad_lines: Skip malformed lines (counted, one warning at the end) instead of raising.
        bad: Collects the skipped lines (pass one to read its ``count`` afterwards).

    Raises:
        DataFormatError: invalid UTF-8, a line that is not JSON or lacks the column, a non-integer id
            (the message names the file and line).
    """
    fmt = resolve_format(source, fmt)
    name = "<stdin>" if str(source) == STDIN else str(source)
    if id_column is not None and fmt == "txt":
        raise ValueError(f"{name}: a text file has no columns; --id-column needs JSONL, CSV or Parquet")
    bad = bad if bad is not None else BadLines(name, skip=skip_bad_lines)
    with bad:
        if fmt == "parquet":
            yield from _parquet_rows(source, name, column, id_column, bad)
            return
        with _open_binary(source) as stream:
            lines = _decoded_lines(stream, bad)
            if fmt == "txt":
                for number, line in lines:
                    yield number, None, line.rstrip("\r\n")
            elif fmt == "jsonl":
                yield from _jsonl_rows(lines, column, id_column, bad)
            else:
                yield from _table_rows(lines, name, column, id_column, "," if fmt == "csv" else "\t", bad)


def fingerprint_input(source: str | Path) -> InputFingerprint | None:
    """Size, SHA-256 and line count of a file (one pass); ``None`` for standard input."""
    if str(source) == STDIN:
        return None
    digest, size, lines = hashlib.sha256(), 0, 0
    with _open_binary(source) as stream:
        while block := stream.read(8 << 20):
            digest.update(block)
            size += len(block)
            lines += block.count(b"\n")
    return InputFingerprint(size, digest.hexdigest(), lines)


def _open_binary(source: str | Path) -> Any:
    if str(source) == STDIN:
        from contextlib import nullcontext

        return nullcontext(getattr(sys.stdin, "buffer", sys.stdin))
    if "://" in str(source):
        from pyarrow import fs as pafs

        filesystem, path = pafs.FileSystem.from_uri(str(source))
        return filesystem.open_input_stream(path)
    return open(source, "rb")  # closed by the caller's with


def _decoded_lines(stream: IO[Any], bad: BadLines) -> Iterator[tuple[int, str]]:
    """``(line number, line with its ending)``, strict UTF-8; an invalid line is reported (or skipped)."""
    for number, raw in enumerate(_split_lines(stream), start=1):
        if isinstance(raw, str):  # a text stream (a replaced sys.stdin): already decoded
            yield number, raw
            continue
        line = decode_line(raw, number, bad)
        if line is not None:
            yield number, line


def _split_lines(stream: Any) -> Iterable[bytes | str]:
    if hasattr(stream, "readline"):
        return iter(stream.readline, stream.read(0))
    return _lines_of_blocks(stream)


def _lines_of_blocks(stream: Any) -> Iterator[bytes]:
    """Lines of a pyarrow input stream, which has ``read`` but no ``readline``."""
    rest = b""
    while block := stream.read(1 << 20):
        lines = (rest + block).split(b"\n")
        rest = lines.pop()
        yield from (line + b"\n" for line in lines)
    if rest:
        yield rest


def _jsonl_rows(
    lines: Iterable[tuple[int, str]], column: str, id_column: str | None, bad: BadLines
) -> Iterator[TextRow]:
    for number, line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            bad.found(number, f"not valid JSON: {error.msg}")
            continue
        value = record.get(column) if isinstance(record, dict) else record
        if not isinstance(value, str):
            bad.found(number, f"no string field {column!r}")
            continue
        if id_column is None:
            yield number, None, value
        elif (row_id := _integer_id(record, id_column, number, bad)) is not None:
            yield number, row_id, value


def _table_rows(
    lines: Iterable[tuple[int, str]],
    name: str,
    column: str,
    id_column: str | None,
    delimiter: str,
    bad: BadLines,
) -> Iterator[TextRow]:
    current = [0]

    def physical() -> Iterator[str]:
        for number, line in lines:
            current[0] = number
            yield line

    reader = csv.DictReader(physical(), delimiter=delimiter)
    fields = reader.fieldnames
    for needed in (column, id_column):
        if needed is not None and (fields is None or needed not in fields):
            raise DataFormatError(name, 1, f"header has no column {needed!r} (columns: {fields})")
    for row in reader:
        value = row.get(column)
        if value is None:
            bad.found(current[0], f"row has no value for column {column!r}")
            continue
        if id_column is None:
            yield current[0], None, value
        elif (row_id := _integer_id(row, id_column, current[0], bad)) is not None:
            yield current[0], row_id, value


def _parquet_rows(
    source: str | Path, name: str, column: str, id_column: str | None, bad: BadLines
) -> Iterator[TextRow]:
    import pyarrow.parquet as pq

    with _open_binary(source) if "://" in str(source) else open(source, "rb") as handle:
        parquet = pq.ParquetFile(handle)
        names = parquet.schema_arrow.names
        for needed in (column, id_column):
            if needed is not None and needed not in names:
                raise DataFormatError(name, 1, f"no column {needed!r} (columns: {names})")
        wanted = [column] if id_column is None else [column, id_column]
        number = 0
        for batch in parquet.iter_batches(batch_size=8192, columns=wanted):
            texts = batch.column(0).to_pylist()
            ids = batch.column(1).to_pylist() if id_column is not None else [None] * len(texts)
            for text, row_id in zip(texts, ids):
                number += 1
                if not isinstance(text, str):
                    bad.found(number, f"row {number}: column {column!r} is {text!r}, not a string")
                elif id_column is None:
                    yield number, None, text
                elif (checked := _integer_id({id_column: row_id}, id_column, number, bad)) is not None:
                    yield number, checked, text


def _integer_id(record: Any, id_column: str, number: int, bad: BadLines) -> int | None:
    value = record.get(id_column) if isinstance(record, dict) else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return value
    bad.found(number, f"id column {id_column!r} holds {value!r}, not an integer")
    return None
