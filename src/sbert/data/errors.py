"""Malformed data lines: an error naming file and line, or (``skip_bad_lines``) skipped and counted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

logger = logging.getLogger("sbert")


class DataFormatError(ValueError):
    """A malformed line in a data file; the message names the file and the line number."""

    def __init__(self, path: Path | str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path, self.line, self.problem = Path(path), line, problem


class BadLines:
    """What a reader does with a malformed line: raise :class:`DataFormatError`, or skip and count it.

    Used as a context manager around the loop over a file's lines; on leaving, a skipping reader logs
    one warning with the count and the first problem.

    Examples:
        >>> with BadLines("scores.txt", skip=True) as bad:
        ...     for number, line in enumerate(["1.0", "x"], start=1):
        ...         if not line[0].isdigit():
        ...             bad.found(number, f"{line!r} is not a number")
        >>> bad.count
        1
    """

    def __init__(self, path: Path | str, skip: bool = False) -> None:
        self.path = Path(path)
        self.skip = skip
        self.count = 0
        self.first: str | None = None

    def found(self, line: int, problem: str) -> None:
        """Report a malformed line: raises unless skipping, in which case it is counted."""
        if not self.skip:
            raise DataFormatError(self.path, line, problem)
        self.count += 1
        if self.first is None:
            self.first = f"line {line}: {problem}"

    def __enter__(self) -> BadLines:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.count:
            logger.warning("%s: skipped %d malformed line(s) (first: %s)", self.path, self.count, self.first)


def decode_line(raw: bytes, number: int, bad: BadLines) -> str | None:
    """``raw`` decoded as UTF-8, or ``None`` after reporting line ``number`` to ``bad`` (raised, or
    skipped and counted): one line of other bytes is one bad line, not the end of the file."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        bad.found(number, f"not valid UTF-8 (byte 0x{raw[error.start]:02x} at column {error.start + 1})")
        return None


def utf8_lines(path: Path, bad: BadLines) -> Iterator[tuple[int, str]]:
    """``(line number, line ending in "\\n")`` of ``path``'s valid UTF-8 lines (``\\r\\n`` read as
    ``\\n``, as text mode reads it); the others go to ``bad`` (:func:`decode_line`).

    Examples:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "scores.txt"
        >>> _ = path.write_bytes(b"1.0\\r\\ncaf\\xe9\\n2.0\\n")
        >>> with BadLines(path, skip=True) as bad:
        ...     lines = list(utf8_lines(path, bad))
        >>> lines, bad.first
        ([(1, '1.0\\n'), (3, '2.0\\n')], 'line 2: not valid UTF-8 (byte 0xe9 at column 4)')
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = decode_line(raw, number, bad)
            if line is not None:
                yield number, line[:-2] + "\n" if line.endswith("\r\n") else line
