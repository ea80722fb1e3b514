"""Malformed data lines: an error naming file and line, or (``skip_bad_lines``) skipped and counted."""

from __future__ import annotations

import logging
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
