"""Ranking candidates for a query: sentence-transformers' ``rank`` and sbert's ``rerank``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from sbert.cross_encoder.loading import Activation
from sbert.cross_encoder.scores import ranked


class Ranked(NamedTuple):
    """A reranked candidate: its position in the list given, the score, and the text."""

    corpus_id: int
    score: float
    text: str


class RankMethods:
    """``rank`` and ``rerank`` on :meth:`predict` (a mixin of :class:`~sbert.cross_encoder.CrossEncoder`)."""

    if TYPE_CHECKING:  # what the cross-encoder provides

        @property
        def num_labels(self) -> int: ...
        def predict(self, inputs: Any, batch_size: int = 32, *args: Any, **kwargs: Any) -> Any: ...

    def rank(
        self,
        query: str,
        documents: Sequence[str],
        top_k: int | None = None,
        return_documents: bool = False,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        activation_fn: Activation | None = None,
    ) -> list[dict[str, Any]]:
        """Documents by the score of ``(query, document)``, as sentence-transformers' ``rank``:
        ``[{"corpus_id": i, "score": s[, "text": d]}, ...]`` best first (ties: earlier first).

        Needs a one-output model.

        Examples:
            >>> from sbert import CrossEncoder
            >>> model = CrossEncoder.from_pretrained(num_labels=1)   # an untrained head: any order
            >>> hits = model.rank("music", ["a song", "a tax form"], top_k=1, return_documents=True)
            >>> [sorted(hit) for hit in hits]
            [['corpus_id', 'score', 'text']]
        """
        self._needs_one_label("rank")
        pairs = [(query, document) for document in documents]
        scores = self.predict(
            pairs, batch_size, show_progress_bar=show_progress_bar, activation_fn=activation_fn
        )
        return ranked(scores.tolist(), documents, top_k, return_documents)

    def rerank(
        self, query: str, candidates: Sequence[str], top_k: int | None = None, batch_size: int = 32
    ) -> list[Ranked]:
        """Order candidates by the score of ``(query, candidate)``, best first (ties: earlier first),
        as :class:`Ranked` tuples (sbert's form of :meth:`rank`).

        Needs a one-output (regression) model. Not run by the tests: a new head is untrained, so
        its order is random. Example:
            >>> from sbert import CrossEncoder
            >>> model = CrossEncoder.from_pretrained(num_labels=1)
            >>> [r.corpus_id for r in model.rerank("music", ["a song", "a tax form"], top_k=1)]  # doctest: +SKIP
            [0]
        """
        self._needs_one_label("rerank")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        scores = self.predict([(query, text) for text in candidates], batch_size=batch_size)
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [Ranked(int(i), float(scores[i]), candidates[i]) for i in order]

    def _needs_one_label(self, method: str) -> None:
        if self.num_labels != 1:
            raise ValueError(
                f"{method} needs a one-output model; this one has {self.num_labels} labels "
                "(score pairs with predict instead)"
            )
