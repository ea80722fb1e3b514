"""``do_lower_case`` as sentence-transformers 6.2 applies it: a ``Lowercase`` normalizer put first in
the Rust tokenizer, not ``str.lower()`` on the text before it.

The two differ: lowering the text first turns a literal ``[SEP]`` into ``[sep]`` (no longer the
special token) and a word-final capital sigma into ``ς`` (Python's final-sigma rule), where the
normalizer runs after special tokens are split off and maps ``Σ`` to ``σ`` everywhere (vectors
0.066-0.15 apart on such texts). sentence-transformers up to 5 lowered the text; 6.2 lowers inside.
"""

from __future__ import annotations

from typing import Any

from tokenizers.normalizers import Lowercase
from tokenizers.normalizers import Sequence as NormalizerSequence


def lowers(normalizer: Any) -> bool:
    """Whether ``normalizer`` (or a sequence of them) holds ``Lowercase`` (sentence-transformers'
    test: a BERT normalizer's own ``lowercase`` does not count)."""
    if isinstance(normalizer, Lowercase):
        return True
    return isinstance(normalizer, NormalizerSequence) and any(
        isinstance(n, Lowercase) for n in _members(normalizer)
    )


def lower_inside(tokenizer: Any) -> tuple[bool, Any]:
    """Put ``Lowercase`` first in a fast ``tokenizer``'s normalizer, as sentence-transformers 6.2's
    Transformer does for ``do_lower_case``; returns (changed, the normalizer before) so that it can
    be put back.

    Examples:
        >>> from tokenizers import Tokenizer, models, normalizers
        >>> from transformers import PreTrainedTokenizerFast
        >>> backend = Tokenizer(models.WordLevel({"[UNK]": 0, "σ": 1}, unk_token="[UNK]"))
        >>> backend.normalizer = normalizers.NFD()
        >>> tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend)
        >>> lower_inside(tokenizer)[0], tokenizer.backend_tokenizer.normalizer.normalize_str("Σ")
        (True, 'σ')
        >>> lower_inside(tokenizer)[0]  # already lowers: left as it is
        False
    """
    backend = tokenizer.backend_tokenizer
    before = backend.normalizer
    if lowers(before):
        return False, before
    if isinstance(before, NormalizerSequence):
        backend.normalizer = NormalizerSequence([Lowercase(), *_members(before)])
    else:
        backend.normalizer = NormalizerSequence([Lowercase()] + ([before] if before is not None else []))
    return True, before


def _members(sequence: Any) -> list[Any]:
    """The normalizers of a ``normalizers.Sequence`` (iterable at run time; its stub says not)."""
    return list(sequence)
