"""The encode loop every kind shares: sentence-transformers' ``encode`` arguments parsed once into an
:class:`EncodeRequest`, texts tokenized with the one ``valid_utf8`` retry
(:func:`~sbert.base.inputs.tokenized`, kept below the runners that tokenize too), and
length-sorted batches behind one progress bar (:func:`sorted_batches`). Each kind adds only its
runner call and its output step (dense vectors: :mod:`sbert.encoder.output`; sparse:
:mod:`sbert.sparse.output`).

Example:
    >>> from sbert import SentenceEncoder
    >>> model = SentenceEncoder.from_pretrained(device="cpu")
    >>> request = EncodeRequest.of(model, "rain", prompt="query: ")
    >>> request.texts, request.single, request.prompt_length > 0, request.show_progress_bar
    (['query: rain'], True, True, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from sbert.base.batching import length_sorted_batches
from sbert.base.inputs import as_texts, check_count, tokenized
from sbert.base.options import PROGRESS_BAR_MIN_SENTENCES
from sbert.inference.plan import EnginePlan
from sbert.inference.runner import RunOptions
from sbert.inference.steps import check_finite


@dataclass(frozen=True)
class EncodeRequest:
    """What every kind's ``encode`` was asked, checked: the texts with their prompt, whether one
    string came in (one vector out), the prompt's tokens the pooling leaves out, the batch size and
    whether a progress bar shows."""

    texts: list[str]
    single: bool
    prompt_length: int
    batch_size: int
    show_progress_bar: bool

    @classmethod
    def of(
        cls,
        model: Any,
        sentences: str | Iterable[str],
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        device: Any = None,
        pool: Any = None,
        bar_by_default: bool = True,
    ) -> EncodeRequest:
        """sentence-transformers' arguments, parsed once: the sentences (:func:`~sbert.base.inputs.as_texts`),
        the prompt (``model.with_prompt``), ``batch_size``, the bar (default: on from 1000 texts, where
        ``bar_by_default``: not for a static table, whose one sparse mean is over before a bar helps)
        and ``device``/``pool`` (the model moved there: ``model.move_for_encode``).

        Raises:
            TypeError: ``sentences`` not a string or an ordered collection of strings, ``batch_size``
                not a whole number.
            ValueError: ``batch_size`` below 1, an unknown ``prompt_name``, a ``pool``.
        """
        check_count("batch_size", batch_size)
        model.move_for_encode(device, pool)
        texts, length = model.with_prompt(as_texts(sentences), prompt_name, prompt)
        if show_progress_bar is None:
            show_progress_bar = bar_by_default and len(texts) >= PROGRESS_BAR_MIN_SENTENCES
        return cls(texts, isinstance(sentences, str), length, batch_size, bool(show_progress_bar))


def sorted_batches(
    lengths: Sequence[int], batch_size: int, show_progress_bar: bool, desc: str = "Batches"
) -> Iterator[np.ndarray]:
    """The indices of each batch, longest texts first (:func:`~sbert.base.batching.length_sorted_batches`),
    each counted on one progress bar as it is handed out.

    Examples:
        >>> [batch.tolist() for batch in sorted_batches([3, 9, 4], 2, show_progress_bar=False)]
        [[1, 2], [0]]
    """
    with tqdm(total=len(lengths), desc=desc, disable=not show_progress_bar) as bar:
        for batch in length_sorted_batches(lengths, batch_size):
            yield batch
            bar.update(len(batch))


def planned_vectors(model: Any, plan: EnginePlan, request: EncodeRequest, options: RunOptions) -> Tensor:
    """Vectors ``(n, model.dim)``, float32 on the CPU, of the request's texts by the runner ``plan``
    names on the model's :class:`~sbert.inference.planning.Planning` (the next-best where it fails),
    checked finite (the error names the first bad sentence)."""
    embeddings = torch.empty((len(request.texts), model.dim), dtype=torch.float32)
    if request.texts:
        options = replace(options, prompt_length=request.prompt_length)
        plan, embeddings = model.planning.run(plan, request.texts, options, request.show_progress_bar)
    check_finite(embeddings, plan)
    return embeddings


__all__ = ["EncodeRequest", "planned_vectors", "sorted_batches", "tokenized"]
