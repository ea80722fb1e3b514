"""Prompts: text put before every sentence, as retrieval models ask (``"query: "``, ``"passage: "``).

sentence-transformers keeps them in ``config_sentence_transformers.json`` (``prompts`` by name and a
``default_prompt_name`` applied when no other is asked for); sbert reads, applies and saves them the
same way, so a model gives the same vectors in both. :class:`Prompts` is that data;
:class:`PromptMethods` is what an encoder does with it (:meth:`~PromptMethods.with_prompt`, and
sentence-transformers' ``encode_query`` / ``encode_document``, which take the model's query and
document prompts).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from torch import Tensor

from sbert.base.inputs import valid_utf8

logger = logging.getLogger("sbert")

# encode_document() takes the first of these a model has, as sentence-transformers does.
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")


@dataclass(frozen=True)
class Prompts:
    """A model's named prompts and the one applied by default.

    Examples:
        >>> prompts = Prompts({"query": "query: ", "passage": "passage: "}, default_name="query")
        >>> prompts.resolve(), prompts.resolve("passage"), prompts.resolve(prompt="Q: ")
        ('query: ', 'passage: ', 'Q: ')
        >>> prompts.document_name()
        'passage'
    """

    named: Mapping[str, str] = field(default_factory=dict)
    default_name: str | None = None

    def __post_init__(self) -> None:
        if self.default_name is not None and self.default_name not in self.named:
            raise ValueError(
                f"default prompt name {self.default_name!r} is not one of the prompts {sorted(self.named)}"
            )

    def resolve(self, prompt_name: str | None = None, prompt: str | None = None) -> str | None:
        """The text to put before each sentence: ``prompt`` itself, else the prompt named
        ``prompt_name``, else the default prompt (``None``: none)."""
        if prompt is not None:
            if prompt_name is not None:
                logger.warning("both prompt and prompt_name were given: the prompt %r is used", prompt)
            return prompt
        if prompt_name is not None:
            if prompt_name not in self.named:
                known = ", ".join(repr(name) for name in self.named) or "none"
                raise ValueError(f"unknown prompt_name {prompt_name!r}; this model's prompts: {known}")
            return self.named[prompt_name]
        return self.named.get(self.default_name) if self.default_name is not None else None

    def query_name(self) -> str | None:
        """The prompt ``encode_query()`` applies when given none: ``query`` if the model has it."""
        return "query" if "query" in self.named else None

    def document_name(self) -> str | None:
        """The prompt ``encode_document()`` applies when given none: ``document``, ``passage`` or
        ``corpus``, the first the model has."""
        return next((name for name in DOCUMENT_PROMPT_NAMES if name in self.named), None)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], source: str) -> Prompts:
        """Read the ``prompts`` and ``default_prompt_name`` of a ``config_sentence_transformers.json``."""
        named = config.get("prompts") or {}
        if not isinstance(named, Mapping) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in named.items()
        ):
            raise ValueError(f"{source}: prompts must map names to strings, got {named!r}")
        default = config.get("default_prompt_name")
        if default is not None and not isinstance(default, str):
            raise ValueError(f"{source}: default_prompt_name must be a string, got {default!r}")
        try:
            return cls(dict(named), default)
        except ValueError as error:
            raise ValueError(f"{source}: {error}") from error

    def config(self) -> dict[str, Any]:
        """The two keys sentence-transformers reads back."""
        return {"prompts": dict(self.named), "default_prompt_name": self.default_name}


class PromptedInput(Protocol):
    """What :meth:`PromptMethods.with_prompt` asks of an input module (a Transformer or a static
    table): a protocol, so that the prompts stay below the modules."""

    def prompt_length(self, prompt: str) -> int: ...


class PromptMethods:
    """The prompt side of an encoder (a mixin): :meth:`with_prompt`, :meth:`encode_query`,
    :meth:`encode_document` and the prompts they take.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained()
        >>> model.prompts = Prompts({"query": "query: ", "passage": "passage: "})
        >>> model.query_prompt(), model.document_prompt()
        ('query: ', 'passage: ')
        >>> model.with_prompt(["rain"], prompt_name="query")[0]
        ['query: rain']
    """

    prompts: Prompts
    input_module: PromptedInput
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
        return [text + sentence for sentence in sentences], self.prompt_tokens(text)

    def prompt_tokens(self, text: str) -> int:
        """The tokens of the prompt ``text`` that the pooling is told of (a sparse model: only
        where its pooling leaves the prompt out)."""
        return int(self.input_module.prompt_length(valid_utf8(text)))

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
