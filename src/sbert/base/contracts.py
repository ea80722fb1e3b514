"""The ground floor: the contracts every layer above types against, importing nothing of sbert.

An evaluator, a store, an index, a server handler or a loss needs *an encoder*, not sbert's
:class:`~sbert.SentenceEncoder` in particular (a GloVe baseline or a wrapped model serve as well), so
they type their model as :class:`Encoder` (or :class:`RetrievalEncoder` where queries and documents
are encoded apart) and never as ``Any``. The trainer takes any :class:`Evaluator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from torch import Tensor


# What an evaluator scores: an Encoder for most, a CrossEncoder for the cross-encoder's.
ModelT = TypeVar("ModelT", contravariant=True)


class Encoder(Protocol):
    """Anything with ``encode(list[str]) -> (n, dim)``: sbert models and the baselines alike."""

    def encode(self, sentences: list[str], *, batch_size: int = ...) -> np.ndarray | Tensor: ...


@runtime_checkable
class SizedEncoder(Encoder, Protocol):
    """An :class:`Encoder` that says the size of its vectors (``dim``) before encoding anything."""

    @property
    def dim(self) -> int: ...


class RetrievalEncoder(Protocol):
    """An encoder with a query side and a document side (each with its prompt), as search, mining
    and retrieval evaluation use it: :class:`~sbert.SentenceEncoder` and :class:`~sbert.static.StaticEncoder`.

    ``options`` are :meth:`~sbert.SentenceEncoder.encode`'s (``batch_size``, ``normalize``,
    ``show_progress_bar``...).
    """

    def encode_query(
        self, sentences: list[str], prompt_name: str | None = ..., prompt: str | None = ..., **options: Any
    ) -> np.ndarray | Tensor: ...

    def encode_document(
        self, sentences: list[str], prompt_name: str | None = ..., prompt: str | None = ..., **options: Any
    ) -> np.ndarray | Tensor: ...


class Evaluator(Protocol[ModelT]):
    """``evaluator(model) -> {metric: value}``, higher is better: what the
    :class:`~sbert.training.Trainer` calls on the dev set after each epoch (and keeps the best model by).

    Examples:
        >>> class LengthScore:  # any callable with this shape is an evaluator; sbert's are in sbert.evaluation
        ...     primary_metric = "dim"
        ...     def __call__(self, model: Encoder) -> dict[str, float]:
        ...         return {"dim": float(model.encode(["A man eats."]).shape[1])}
        >>> from sbert import SentenceEncoder
        >>> evaluator: Evaluator[Encoder] = LengthScore()
        >>> evaluator(SentenceEncoder.from_pretrained())
        {'dim': 384.0}
    """

    def __call__(self, model: ModelT) -> dict[str, float]: ...


class ServedModel(Encoder, Protocol):
    """What ``sbert serve`` asks of a model beyond :class:`Encoder`: its size, limits, engine and
    prompts, and token ids to vectors on the engine that embeds text (``encode_token_ids``).
    :class:`~sbert.SentenceEncoder` and the static encoder are both one; what only some can do (a
    tokenizer's offsets, token vectors) the server asks through ``sbert.server.abilities``."""

    name: str
    layers: Any
    pooling: Any
    prompts: Any  # sbert.model.prompts.Prompts

    @property
    def dim(self) -> int: ...

    @property
    def max_seq_length(self) -> int: ...

    @property
    def precision(self) -> str: ...

    @property
    def backend(self) -> str: ...

    @property
    def packs(self) -> bool: ...

    @property
    def plan(self) -> Any: ...  # sbert.inference.plan.EnginePlan

    def query_prompt(self, prompt_name: str | None = None, prompt: str | None = None) -> str | None: ...

    def token_counts(
        self, sentences: Sequence[str], prompt_name: str | None = None, prompt: str | None = None
    ) -> list[int]: ...

    def collate(self, token_ids: Sequence[Sequence[int]]) -> dict[str, Tensor]: ...

    def forward(self, features: dict[str, Tensor], normalize: bool = True) -> Tensor: ...

    def encode_token_ids(self, ids: Sequence[Sequence[int]], options: Any = None) -> Tensor: ...
