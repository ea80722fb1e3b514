"""What ``encode()`` accepts as sentences, checked before any work: the errors name the bad item."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from sbert.base.errors import MaxSeqLengthError

T = TypeVar("T")


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


def check_max_seq_length(
    value: object, limit: int | None, where: str, *, least: int = 1, required: bool = False
) -> None:
    """Refuse a ``max_seq_length`` that is not a whole number from ``least`` to ``limit``: the one
    check of the value wherever it enters (an argument, a setter, a saved config), so 0 is refused
    with the same error everywhere.

    Args:
        value: The setting (``None``: not set, the model's own limit applies, unless ``required``).
        limit: The longest input the model's position table holds (``None``: no such limit).
        where: What the message names: the file, the model or the argument the value came from.
        least: The shortest that makes sense (a cross-encoder's pair needs 3: ``[CLS]`` and two ``[SEP]``).
        required: ``None`` is refused too (a setter: there is no "not set" to go back to).

    Raises:
        MaxSeqLengthError: ``value`` is not a whole number, is below ``least``, or is over ``limit``
            (a :class:`~sbert.base.errors.ModelLoadError` and a ``ValueError``).

    Examples:
        >>> check_max_seq_length(128, 512, "sentence_bert_config.json")
        >>> check_max_seq_length(-5, 512, "sentence_bert_config.json")
        Traceback (most recent call last):
        ...
        sbert.base.errors.MaxSeqLengthError: sentence_bert_config.json: max_seq_length -5 is not a whole number of at least 1
    """
    if value is None and not required:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < least:
        raise MaxSeqLengthError(
            f"{where}: max_seq_length {value!r} is not a whole number of at least {least}"
        )
    if limit is not None and int(value) > limit:
        raise MaxSeqLengthError(
            f"{where}: max_seq_length {value} is more than the {limit} positions the model has "
            "(config.json max_position_embeddings); longer inputs would fail at encode"
        )


def check_texts(texts: Sequence[object]) -> None:
    """Raise ``TypeError`` naming the first item that is not a string."""
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"sentences[{index}] is {type(text).__name__}, expected str")


def valid_utf8(text: str) -> str:
    return text.encode("utf-8", errors="replace").decode("utf-8")


def tokenized(tokenize: Callable[[list[str]], T], texts: Sequence[str]) -> T:
    """``tokenize(texts)``, once more with lone surrogates replaced (:func:`valid_utf8`) where the
    tokenizer refuses them (the Rust tokenizer takes only valid UTF-8): the one retry every kind,
    runner and server path makes, rather than fail on text a user cannot easily see.

    Examples:
        >>> def strict(texts):
        ...     if any(not text.isascii() for text in texts):
        ...         raise TypeError("not valid UTF-8")
        ...     return texts
        >>> tokenized(strict, ["a\\ud800"])
        ['a?']
    """
    try:
        return tokenize(list(texts))
    except TypeError:
        return tokenize([valid_utf8(text) for text in texts])
