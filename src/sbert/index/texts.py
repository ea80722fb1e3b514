"""The texts an index gives back with its hits: kept in the index (``corpus.jsonl``), or read by id
from the embedding store it was built from, which must be the same store as then."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sbert.index.files import IndexLoadError


def kept_texts(ids: np.ndarray, texts: Sequence[str | None], corpus_ids: Sequence[int]) -> list[str | None]:
    """The texts of ``corpus_ids`` among ``texts`` (row ``i`` belongs to ``ids[i]``); ``None`` for an
    id the index lacks. An id held twice gives its first row's text.

    Examples:
        >>> kept_texts(np.array([7, 3, 7]), ["a", "b", "c"], [3, 7, 5])
        ['b', 'a', None]
    """
    position: dict[int, int] = {}
    for row, corpus_id in enumerate(np.asarray(ids).tolist()):
        position.setdefault(int(corpus_id), row)
    return [texts[position[c]] if c in position else None for c in map(int, corpus_ids)]


def open_source_store(store_path: str, store_digest: str | None) -> Any:
    """The embedding store an index was built from, refused if it changed since (its ids may then
    name other texts)."""
    from sbert.store import EmbeddingStore  # the store's floor loads only for an index built from one

    store = EmbeddingStore.open(store_path)
    if store_digest is not None and store.digest != store_digest:
        raise IndexLoadError(
            f"{store_path}: the store changed since this index was built from it "
            f"(store digest {store.digest[:16]}…, index {store_digest[:16]}…), so its ids "
            "may name other texts; build the index again from the store"
        )
    return store
