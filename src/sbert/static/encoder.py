"""StaticEncoder: a :class:`~sbert.SentenceEncoder` whose input module is a static token table.

A static model keeps a table of token vectors (distilled from a transformer, see
:mod:`sbert.static.distill`) and embeds a sentence as the mean of its tokens' rows
(:class:`~sbert.modules.StaticEmbedding`). It is a :class:`~sbert.SentenceEncoder` like any other,
used wherever one is (stores, indexes, search, mining, clustering, the server, evaluation), and is
saved in sentence-transformers' ``StaticEmbedding`` layout, so ``SentenceTransformer(path)`` gives
the same vectors. ``StaticEncoder`` itself is not a subclass: calling it builds that encoder, and
``isinstance(model, StaticEncoder)`` asks :attr:`SentenceEncoder.is_static
<sbert.SentenceEncoder.is_static>`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tokenizers import Tokenizer
from torch import Tensor

from sbert.base.inputs import check_max_seq_length
from sbert.encoder.model import SentenceEncoder
from sbert.modules import Normalize, StaticEmbedding


class _IsStatic(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, SentenceEncoder) and instance.is_static


class StaticEncoder(metaclass=_IsStatic):
    """Build a static :class:`~sbert.SentenceEncoder` (sentence-transformers' ``StaticEmbedding``).

    Calling it returns a :class:`~sbert.SentenceEncoder` (see ``__new__`` for the arguments).

    Examples:
        >>> import torch
        >>> from tokenizers.models import WordLevel
        >>> from tokenizers.pre_tokenizers import Whitespace
        >>> tokenizer = Tokenizer(WordLevel({"[UNK]": 0, "a": 1, "cat": 2}, unk_token="[UNK]"))
        >>> tokenizer.pre_tokenizer = Whitespace()
        >>> model = StaticEncoder(tokenizer, torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
        >>> model.encode(["a cat", ""]).tolist()
        [[0.5, 0.5], [0.0, 0.0]]
        >>> isinstance(model, StaticEncoder), type(model).__name__
        (True, 'SentenceEncoder')
    """

    def __new__(  # type: ignore[misc]
        cls,
        tokenizer: Tokenizer,
        weights: Tensor | np.ndarray,
        max_seq_length: int | None = None,
        normalize: bool = False,
        name: str | None = None,
    ) -> SentenceEncoder:
        """A :class:`~sbert.SentenceEncoder` whose input module is this token table.

        Args:
            tokenizer: A Rust ``tokenizers.Tokenizer``; sentences are tokenized without special tokens.
            weights: The token table, shape (vocabulary, dim).
            max_seq_length: Keep only the first this many tokens of a sentence (``None``: all of them).
            normalize: End with a Normalize layer (unit-length vectors), as a saved model may.
            name: What the model was loaded from, for display.
        """
        check_max_seq_length(max_seq_length, None, name or "StaticEncoder")
        table = StaticEmbedding(tokenizer, weights, max_seq_length)
        return SentenceEncoder(table, layers=[Normalize()] if normalize else [], name=name)
