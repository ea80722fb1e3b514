"""What ``encode()`` accepts as sentences, checked before any work: the errors name the bad item."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence


def as_texts(sentences: object) -> list[str]:
    """``sentences`` (one string, or an ordered collection of strings) as a list of strings.

    Raises:
        TypeError: for what iterates to something other than its texts: a dict or a DataFrame (keys
            or column names), bytes (integers), a set (no order to return vectors in); ``None`` or a
            number; or an item that is not a string.

    Examples:
        >>> as_texts("one"), as_texts(("a", "b"))
        (['one'], ['a', 'b'])
    """
    if isinstance(sentences, str):
        return [sentences]
    kind = "None" if sentences is None else type(sentences).__name__
    if isinstance(sentences, bytes | bytearray | memoryview):
        raise TypeError(f"sentences is {kind}: decode it to str first, e.g. data.decode('utf-8')")
    if isinstance(sentences, Mapping) or hasattr(sentences, "columns"):
        raise TypeError(
            f"sentences is a {kind}, which iterates over its keys or column names: pass a list of "
            "strings, e.g. list(d.values()) or df['text'].tolist()"
        )
    if isinstance(sentences, set | frozenset):  # dict keys, also a Set, keep their order
        raise TypeError(f"sentences is a {kind}, which has no order to return vectors in: pass a list")
    if not isinstance(sentences, Iterable):
        raise TypeError(f"sentences is {kind}, expected a string or a list of strings")
    texts = list(sentences)
    check_texts(texts)
    return texts


def check_count(name: str, value: object) -> None:
    """``TypeError`` unless ``value`` is a whole number (not a bool), ``ValueError`` if below 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


def check_texts(texts: Sequence[object]) -> None:
    """Raise ``TypeError`` naming the first item that is not a string."""
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"sentences[{index}] is {type(text).__name__}, expected str")


def valid_utf8(text: str) -> str:
    return text.encode("utf-8", errors="replace").decode("utf-8")
