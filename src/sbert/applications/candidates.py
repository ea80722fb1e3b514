"""The k nearest corpus texts of each query, as a fixed-width table: the candidates that hard-negative
mining (:mod:`sbert.applications.hard_negatives`) filters.

Three ways to find them: exact search in chunks (memory of one score block), a new
:class:`~sbert.index.VectorIndex` of any kind over vectors in memory, or a saved index
(built from a corpus file or an embedding store), where the corpus vectors never enter memory and
the texts are looked up by id.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from sbert.embeddings.search import Hit, top_k_chunked
from sbert.index import VectorIndex


def nearest(
    queries: np.ndarray, corpus: np.ndarray, k: int, index_kind: str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores and corpus positions of each query's ``k`` nearest vectors, best first, (queries, k);
    position -1 and score -inf pad a corpus smaller than ``k``.

    Examples:
        >>> scores, ids = nearest(np.eye(2, dtype="float32"), np.eye(2, dtype="float32"), 3)
        >>> ids.tolist()
        [[0, 1, -1], [1, 0, -1]]
    """
    if index_kind is None:
        scores, ids = top_k_chunked(queries, corpus, k)
        return _padded(scores, ids, k)
    index = VectorIndex.build(corpus, kind=index_kind)
    return _table(index.search(queries, top_k=min(k, len(corpus))), k)


def nearest_in_index(
    index: VectorIndex, queries: np.ndarray, k: int, texts: list[str], position: dict[str, int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`nearest` through a saved index; candidates are numbered by their text.

    A candidate whose text is already in ``texts`` gets its position there (so an anchor's positive
    found in the index is recognised); a new text is appended to ``texts`` and ``position``. A text
    the index holds twice counts once per query (its best score), as a deduplicated corpus would; the
    search asks for ``2k`` so that such repeats do not leave a row short (more than ``k`` repeats can).

    Raises:
        ValueError: the index holds no text for a candidate (mining writes texts, not ids).
    """
    hits = index.search(index.query_vectors(queries), top_k=min(2 * k, len(index)))
    found = sorted({hit.corpus_id for row in hits for hit in row})
    looked_up = dict(zip(found, _texts(index, found)))
    untexted = [corpus_id for corpus_id, text in looked_up.items() if text is None]
    if untexted:
        raise ValueError(
            f"the index holds no text for corpus id {untexted[0]}: mining writes texts, so index a corpus "
            "file, or a store that keeps its texts"
        )
    text_of = {corpus_id: str(text) for corpus_id, text in looked_up.items()}
    for text in text_of.values():
        if text not in position:
            position[text] = len(texts)
            texts.append(text)
    rows = []
    for row in hits:
        kept: dict[int, float] = {}
        for hit in row:  # best first: a repeated text keeps its first, best score
            kept.setdefault(position[text_of[hit.corpus_id]], hit.score)
        rows.append([Hit(i, s) for i, s in kept.items()][:k])
    return _table(rows, k)


def _texts(index: VectorIndex, corpus_ids: Sequence[int]) -> list[str | None]:
    if index.texts is None:
        return index.texts_of(corpus_ids)  # from the store, by id
    # One map for all: texts_of() scans the ids once per id, too slow for a whole mining run.
    where = {int(corpus_id): i for i, corpus_id in enumerate(index.ids)}
    return [index.texts[where[corpus_id]] if corpus_id in where else None for corpus_id in corpus_ids]


def _table(rows: list[list[Hit]], k: int) -> tuple[torch.Tensor, torch.Tensor]:
    scores = torch.tensor([[hit.score for hit in row] + [-float("inf")] * (k - len(row)) for row in rows])
    ids = torch.tensor([[hit.corpus_id for hit in row] + [-1] * (k - len(row)) for row in rows])
    return scores.float().reshape(len(rows), k), ids.long().reshape(len(rows), k)


def _padded(scores: torch.Tensor, ids: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    pad = k - ids.shape[1]
    if pad > 0:
        scores = torch.cat([scores, torch.full((len(ids), pad), -float("inf"))], dim=1)
        ids = torch.cat([ids, torch.full((len(ids), pad), -1, dtype=torch.long)], dim=1)
    return scores.float(), ids.long()
