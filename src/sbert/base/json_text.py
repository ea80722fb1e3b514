"""JSON as the project writes it: never ``NaN`` or ``Infinity``, which Python's :mod:`json` writes
by default but no JSON parser outside Python reads (RFC 8259 has no such numbers).

A value that is not finite is refused with the place it sits in (``['metrics']['spearman']``), so
the caller's error says which number went wrong instead of leaving a file other tools cannot read.
"""

from __future__ import annotations

import json
import math
from typing import Any


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)``, refusing NaN and infinities with where they are.

    Raises:
        ValueError: ``value`` holds a float that is NaN or infinite (the message names its place).

    Examples:
        >>> dumps({"score": 0.5})
        '{"score": 0.5}'
        >>> dumps({"scores": [0.5, float("nan")]})
        Traceback (most recent call last):
        ...
        ValueError: ['scores'][1] is nan: JSON has no NaN or infinity, so it is not written
    """
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as error:
        found = _non_finite(value, "")
        if found is None:
            raise
        place, number = found
        raise ValueError(
            f"{place or 'the value'} is {number!r}: JSON has no NaN or infinity, so it is not written"
        ) from error


def _non_finite(value: Any, place: str) -> tuple[str, float] | None:
    """The first non-finite float in ``value`` and its place (``['key'][index]``), else ``None``."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (place, value)
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _non_finite(item, f"{place}[{key!r}]")
        if found is not None:
            return found
    return None
