"""encode()'s prompts on an encoder: the text put before each sentence, and sentence-transformers'
``encode_query`` / ``encode_document``, which take the model's query and document prompts.

:class:`~sbert.SentenceEncoder` has these through :class:`PromptMethods`; the prompts themselves
(named, default, read and saved as sentence-transformers does) are :class:`~sbert.encoder.prompts.Prompts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from torch import Tensor

from sbert.base.inputs import valid_utf8
from sbert.encoder.prompts import Prompts

if TYPE_CHECKING:
    from sbert.modules import StaticEmbedding, Transformer


class PromptMethods:
    """The prompt side of an encoder (a mixin): :meth:`with_prompt`, :meth:`encode_query`,
    :meth:`encode_document` and the prompts they take.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.encoder.prompts import Prompts
        >>> model = SentenceEncoder.from_pretrained()
        >>> model.prompts = Prompts({"query": "query: ", "passage": "passage: "})
        >>> model.query_prompt(), model.document_prompt()
        ('query: ', 'passage: ')
        >>> model.with_prompt(["rain"], prompt_name="query")[0]
        ['query: rain']
    """

    prompts: Prompts
    input_module: Transformer | StaticEmbedding
    if TYPE_CHECKING:  # what the encoder that mixes this in provides

        def encode(self, sentences: str | Iterable[str], *args: Any, **kwargs: Any) -> Any: ...

    def with_prompt(
        self, sentences: Sequence[str], prompt_name: str | None = None, prompt: str | None = None
    ) -> tuple[list[str], int]:
        """The sentences with the prompt before each (:attr:`prompts`: ``prompt``, else the one named
        ``prompt_name``, else the model's default), and the prompt's length in tokens (0: none; a
        static model always averages the prompt's tokens too)."""
        text = self.prompts.resolve(prompt_name, prompt)
        if not text:
            return list(sentences), 0
        length = self.input_module.prompt_length(valid_utf8(text))
        return [text + sentence for sentence in sentences], length

    def encode_query(
        self,
        sentences: str | Iterable[str],
        prompt_name: str | None = None,
        prompt: str | None = None,
        **options: Any,
    ) -> np.ndarray | Tensor:
        """:meth:`encode` for search queries, with :meth:`query_prompt` and ``task="query"``.

        Examples:
            >>> from sbert import SentenceEncoder
            >>> model = SentenceEncoder.from_pretrained()
            >>> model.encode_query("how do I play the guitar?").shape
            (384,)
        """
        return self.encode(sentences, prompt=self.query_prompt(prompt_name, prompt), task="query", **options)

    def encode_document(
        self,
        sentences: str | Iterable[str],
        prompt_name: str | None = None,
        prompt: str | None = None,
        **options: Any,
    ) -> np.ndarray | Tensor:
        """:meth:`encode` for the passages a search finds, with :meth:`document_prompt` and
        ``task="document"``."""
        return self.encode(
            sentences, prompt=self.document_prompt(prompt_name, prompt), task="document", **options
        )

    def query_prompt(self, prompt_name: str | None = None, prompt: str | None = None) -> str | None:
        """The text :meth:`encode_query` puts before each sentence: ``prompt``, else the prompt
        named ``prompt_name``, else the model's ``query`` prompt, else its default prompt."""
        if prompt_name is None and prompt is None:
            prompt_name = self.prompts.query_name()
        return self.prompts.resolve(prompt_name, prompt)

    def document_prompt(self, prompt_name: str | None = None, prompt: str | None = None) -> str | None:
        """The text :meth:`encode_document` puts before each sentence: as :meth:`query_prompt`,
        with the model's ``document``, ``passage`` or ``corpus`` prompt (the first it has)."""
        if prompt_name is None and prompt is None:
            prompt_name = self.prompts.document_name()
        return self.prompts.resolve(prompt_name, prompt)
