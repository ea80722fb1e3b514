"""A search cascade: a fast model's index proposes candidates, a stronger bi-encoder re-ranks them.

The index (built with, say, a static model) gives each query its ``candidates`` nearest corpus ids;
the rescorer (say, the transformer the static model was distilled from) then embeds the query with
its query prompt and those candidates' texts with its document prompt, and the ``top_k`` candidates
by the rescorer's cosine are returned with the rescorer's scores. Only the candidates are embedded
by the rescorer, so the corpus never needs a transformer index.

This is not :mod:`sbert.index.rescoring`, which re-scores a compressed index's candidates
with the same model's stored vectors: here a second model re-embeds texts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.base.contracts import RetrievalEncoder
from sbert.embeddings.search import Hit, as_numpy
from sbert.embeddings.similarity import ArrayLike

if TYPE_CHECKING:
    from sbert.index import VectorIndex

DEFAULT_CANDIDATES = 50


def cascade_search(
    index: VectorIndex,
    queries: Sequence[str],
    query_embeddings: ArrayLike,
    rescorer: RetrievalEncoder,
    top_k: int = 10,
    candidates: int = DEFAULT_CANDIDATES,
    query_prompt_name: str | None = None,
    document_prompt_name: str | None = None,
    batch_size: int = 32,
) -> list[list[Hit]]:
    """Search ``index`` for ``candidates`` hits per query, then re-rank them with ``rescorer``.

    Args:
        index: A :class:`~sbert.index.VectorIndex` that holds its texts (its
            ``corpus.jsonl``, or a store written with texts).
        queries: The query sentences, for the rescorer.
        query_embeddings: The same queries embedded by the index's model (``encode_query``), (queries, dim).
        rescorer: A :class:`~sbert.SentenceEncoder` (any model with ``encode_query`` and
            ``encode_document``); its own query and document prompts apply.
        top_k: Results per query.
        candidates: Hits taken from the index per query; raised to ``top_k`` when smaller, so
            ``top_k`` results come back whenever the index holds that many.
        query_prompt_name: The rescorer's query prompt by name (default: its query prompt).
        document_prompt_name: The rescorer's document prompt by name (default: its document prompt).
        batch_size: The rescorer's batch size.

    Returns:
        One list per query of :class:`~sbert.embeddings.search.Hit`, best first by the
        rescorer's cosine (its score), equal scores by corpus id, lower first.

    Raises:
        ValueError: ``top_k`` or ``candidates`` < 1, as many queries as embeddings not given, or the
            index holds no text for a candidate (the message names it).

    Examples:
        >>> from sbert.index import VectorIndex
        >>> class Words:  # a stand-in rescorer: one axis per word
        ...     words = ["cat", "dog", "car"]
        ...     def encode_query(self, texts, **options):
        ...         return np.array([[float(w in t) for w in self.words] for t in texts])
        ...     encode_document = encode_query
        >>> texts = ["a cat", "a dog", "a car"]
        >>> index = VectorIndex.build(np.eye(3, dtype="float32"), texts=texts, kind="flat")
        >>> hits = cascade_search(index, ["dog"], np.ones((1, 3)), Words(), top_k=1, candidates=3)
        >>> hits[0][0].corpus_id, round(hits[0][0].score, 3)
        (1, 1.0)
    """
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if candidates < 1:
        raise ValueError(f"candidates must be at least 1, got {candidates}")
    check_has_texts(index)
    vectors = as_numpy(query_embeddings)
    vectors = vectors[None, :] if vectors.ndim == 1 else vectors
    if len(vectors) != len(queries):
        raise ValueError(f"{len(queries)} queries given with {len(vectors)} query embeddings")
    first = index.search(index.query_vectors(vectors), top_k=max(candidates, top_k))
    ids = sorted({hit.corpus_id for hits in first for hit in hits})
    texts = dict(zip(ids, index.texts_of(ids)))
    return rerank(
        queries,
        [[hit.corpus_id for hit in hits] for hits in first],
        texts,
        rescorer,
        top_k,
        query_prompt_name=query_prompt_name,
        document_prompt_name=document_prompt_name,
        batch_size=batch_size,
    )


def rerank(
    queries: Sequence[str],
    candidate_ids: Sequence[Sequence[int]],
    texts: Mapping[int, str | None],
    rescorer: RetrievalEncoder,
    top_k: int = 10,
    query_prompt_name: str | None = None,
    document_prompt_name: str | None = None,
    batch_size: int = 32,
) -> list[list[Hit]]:
    """Order each query's candidates by the rescorer's cosine and keep the ``top_k`` best.

    Each distinct candidate text is embedded once, however many queries share it.

    Args:
        queries: The query sentences.
        candidate_ids: Per query, the corpus ids to re-rank.
        texts: Corpus id → text, for every candidate.
        rescorer: Anything with ``encode_query`` and ``encode_document`` that give unit-length
            vectors when asked with ``normalize=True`` (a :class:`~sbert.SentenceEncoder`).
        top_k: Results per query (fewer when a query has fewer candidates).
        query_prompt_name: The rescorer's query prompt by name (default: its query prompt).
        document_prompt_name: The rescorer's document prompt by name (default: its document prompt).
        batch_size: The rescorer's batch size.

    Returns:
        One list per query of :class:`~sbert.embeddings.search.Hit` ``(corpus_id, cosine)``.

    Raises:
        ValueError: as many queries as candidate lists not given, or a candidate without a text.

    Examples:
        >>> class Length:  # a stand-in rescorer: [1, length], at unit length
        ...     def encode_query(self, texts, normalize=False, **options):
        ...         vectors = np.array([[1.0, len(t)] for t in texts])
        ...         return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        ...     encode_document = encode_query
        >>> rerank(["abc"], [[7, 8]], {7: "a", 8: "abcd"}, Length(), top_k=1)[0][0].corpus_id
        8
    """
    if len(queries) != len(candidate_ids):
        raise ValueError(f"{len(queries)} queries given with {len(candidate_ids)} candidate lists")
    ids = sorted({corpus_id for row in candidate_ids for corpus_id in row})
    missing = [corpus_id for corpus_id in ids if texts.get(corpus_id) is None]
    if missing:
        raise ValueError(
            f"no text for corpus ids {missing[:5]}{'…' if len(missing) > 5 else ''}: a rescorer "
            "re-embeds the candidates' texts, so the index must hold them"
        )
    # Unit-length vectors from the rescorer itself: its dot products are its cosines.
    options: dict[str, Any] = {"batch_size": batch_size, "show_progress_bar": False, "normalize": True}
    query_vectors = as_numpy(
        rescorer.encode_query(list(queries), prompt_name=query_prompt_name, **options)
    )  # (queries, dim)
    doc_vectors = as_numpy(
        rescorer.encode_document([str(texts[i]) for i in ids], prompt_name=document_prompt_name, **options)
    )  # (candidates, dim)
    row_of = {corpus_id: row for row, corpus_id in enumerate(ids)}
    results = []
    for query, row in zip(query_vectors, candidate_ids):
        unique = sorted(set(row))
        scores = doc_vectors[[row_of[i] for i in unique]] @ query if unique else np.zeros(0)
        # Ascending ids, then a stable sort by score: ties keep the lower id first, as exact search does.
        order = np.argsort(-scores, kind="stable")[:top_k]
        results.append([Hit(unique[i], float(scores[i])) for i in order])
    return results


def check_has_texts(index: VectorIndex) -> None:
    """Refuse an index that cannot give its texts back (built without them), naming what to do.

    Raises:
        ValueError: the index holds no texts, or looks them up in a store written without texts.

    Examples:
        >>> from sbert.index import VectorIndex
        >>> check_has_texts(VectorIndex.build(np.eye(2, dtype="float32"), kind="flat"))
        Traceback (most recent call last):
        ...
        ValueError: the index holds no texts (it was built from vectors alone): a rescorer re-embeds the candidates' texts; build the index with its texts
    """
    if index.texts is None:
        if index.store_path is None:
            raise ValueError(
                "the index records no texts and no store to read them from: a rescorer re-embeds "
                "the candidates' texts; build the index with its texts"
            )
        if not index._texts_store().has_texts:
            raise ValueError(
                f"the index reads its texts from the store {index.store_path}, which was written "
                "without texts: a rescorer re-embeds the candidates' texts; write the store with its "
                "texts (sbert encode -o DIR/ without --no-texts) or build the index from a corpus file"
            )
    elif len(index.texts) and all(text is None for text in index.texts):
        raise ValueError(
            "the index holds no texts (it was built from vectors alone): a rescorer re-embeds the "
            "candidates' texts; build the index with its texts"
        )
