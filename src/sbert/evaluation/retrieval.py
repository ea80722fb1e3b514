"""Retrieval evaluation: queries against a corpus, scored as trec_eval scores a run.

NDCG@10, MRR@10, MAP@100 and Recall@{1,10,100} (BEIR's and MTEB's figures), from the model's query and
document prompts, by exact search or through any index kind, so that what a compressed index costs is
seen in NDCG and not only in recall against exact search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sbert.base.contracts import RetrievalEncoder
from sbert.data.beir import RetrievalSet

# The cuts reported; each metric follows trec_eval's definition of the same name.
NDCG_AT, MRR_AT, MAP_AT, RECALL_AT = 10, 10, 100, (1, 10, 100)
Run = Mapping[str, Mapping[str, float]]  # query id → {document id: score}
Qrels = Mapping[str, Mapping[str, int]]  # query id → {document id: relevance grade}


def ranked(scores: Mapping[str, float]) -> list[str]:
    """Document ids best first, ties broken as trec_eval breaks them (document id, descending)."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def query_metrics(scores: Mapping[str, float], relevant: Mapping[str, int]) -> dict[str, float]:
    """The metrics of one query's results (``scores``) against its judgements (grades > 0 count).

    Examples:
        >>> query_metrics({"a": 0.9, "b": 0.8, "c": 0.1}, {"b": 1})["mrr@10"]
        0.5
    """
    ranking = ranked(scores)
    grades = [relevant.get(doc, 0) for doc in ranking]  # (ranks,)
    positives = sum(1 for grade in relevant.values() if grade > 0)
    ideal = sorted((grade for grade in relevant.values() if grade > 0), reverse=True)[:NDCG_AT]
    ideal_dcg = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(ideal))
    dcg = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(grades[:NDCG_AT]) if grade > 0)
    first = next((rank for rank, grade in enumerate(grades[:MRR_AT]) if grade > 0), None)
    hits, precisions = 0, 0.0
    for rank, grade in enumerate(grades[:MAP_AT]):
        if grade > 0:
            hits += 1
            precisions += hits / (rank + 1)
    metrics = {
        f"ndcg@{NDCG_AT}": dcg / ideal_dcg if ideal_dcg else 0.0,
        f"mrr@{MRR_AT}": 1.0 / (first + 1) if first is not None else 0.0,
        f"map@{MAP_AT}": precisions / positives if positives else 0.0,
    }
    for cut in RECALL_AT:
        found = sum(1 for grade in grades[:cut] if grade > 0)
        metrics[f"recall@{cut}"] = found / positives if positives else 0.0
    return metrics


def retrieval_metrics(run: Run, qrels: Qrels) -> dict[str, float]:
    """Each metric averaged over the judged queries; a judged query missing from ``run`` scores 0.

    Raises:
        ValueError: ``qrels`` judges no query.
    """
    if not qrels:
        raise ValueError("no judged query: the qrels are empty")
    per_query = [query_metrics(run.get(query, {}), relevant) for query, relevant in qrels.items()]
    return {name: sum(m[name] for m in per_query) / len(per_query) for name in per_query[0]}


@dataclass
class RetrievalResult:
    """What :func:`evaluate_retrieval` measured.

    Attributes:
        dataset: The retrieval set's name.
        search: ``exact`` or the index kind searched.
        metrics: ``ndcg@10``, ``mrr@10``, ``map@100``, ``recall@1``, ``recall@10``, ``recall@100``.
        queries, documents: How many of each.
        seconds: ``encode`` (corpus and queries), ``index`` (build), ``search`` (all queries).
        memory_bytes: What the searched vectors take in memory (exact: the float32 matrix; an index:
            its estimate, without the process, :func:`~sbert.index.kinds.memory_bytes`).
        dimensions: How many of each vector's dimensions were searched.
        run: Query id → {document id: score}, the ranked lists scored (see :func:`write_run`).
    """

    dataset: str
    search: str
    metrics: dict[str, float]
    queries: int
    documents: int
    seconds: dict[str, float] = field(default_factory=dict)
    memory_bytes: int = 0
    dimensions: int = 0
    run: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "run"}


@dataclass
class EmbeddedSet:
    """A retrieval set's query and document vectors, made once for every search that scores them."""

    dataset: RetrievalSet
    query_ids: list[str]
    doc_ids: list[str]
    queries: np.ndarray  # (queries, dim)
    documents: np.ndarray  # (documents, dim)
    encode_seconds: float


def embed_set(
    model: RetrievalEncoder,
    dataset: RetrievalSet,
    query_prompt_name: str | None = None,
    document_prompt_name: str | None = None,
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
) -> EmbeddedSet:
    """Embed the corpus with ``encode_document`` and the queries with ``encode_query`` (the model's
    document and query prompts unless other names are given)."""
    doc_ids, query_ids = list(dataset.corpus), list(dataset.queries)
    options: dict[str, Any] = {"batch_size": batch_size, "show_progress_bar": show_progress_bar}
    start = time.perf_counter()
    documents = model.encode_document(
        [dataset.corpus[i] for i in doc_ids], prompt_name=document_prompt_name, **options
    )
    queries = model.encode_query(
        [dataset.queries[i] for i in query_ids], prompt_name=query_prompt_name, **options
    )
    seconds = time.perf_counter() - start
    return EmbeddedSet(dataset, query_ids, doc_ids, np.asarray(queries), np.asarray(documents), seconds)


def search_and_score(
    embedded: EmbeddedSet, index_kind: str | None = None, top_k: int = MAP_AT, dimensions: int | None = None
) -> RetrievalResult:
    """Search the embedded queries exactly (``index_kind=None``) or through a
    :class:`~sbert.index.VectorIndex` of that kind, and score the ranked lists.
    ``dimensions`` keeps only the first so many of each vector (a Matryoshka model's prefix)."""
    from sbert.embeddings.search import semantic_search

    full = embedded.documents.shape[1]
    if dimensions is not None and not 1 <= dimensions <= full:
        raise ValueError(f"dimensions must be between 1 and the vectors' {full}, got {dimensions}")
    cut = dimensions or full
    queries, documents = embedded.queries[:, :cut], embedded.documents[:, :cut]

    seconds = {"encode": embedded.encode_seconds, "index": 0.0}
    memory = int(documents.astype(np.float32).nbytes)
    start = time.perf_counter()
    if index_kind is None:
        hits = semantic_search(queries, documents, top_k=top_k)
    else:
        from sbert.index import VectorIndex
        from sbert.index.kinds import BASE_BYTES, memory_bytes

        index = VectorIndex.build(documents, kind=index_kind)
        seconds["index"] = time.perf_counter() - start
        memory = memory_bytes(index.kind, len(index), index.dim, index.params) - BASE_BYTES
        start = time.perf_counter()
        hits = index.search(queries, top_k=top_k)
    seconds["search"] = time.perf_counter() - start
    run = {
        query_id: {embedded.doc_ids[hit.corpus_id]: float(hit.score) for hit in found}
        for query_id, found in zip(embedded.query_ids, hits)
    }
    dataset = embedded.dataset
    metrics = retrieval_metrics(run, dataset.qrels)
    return RetrievalResult(
        dataset.name,
        index_kind or "exact",
        metrics,
        len(embedded.query_ids),
        len(embedded.doc_ids),
        seconds,
        memory,
        cut,
        run,
    )


def evaluate_retrieval(
    model: RetrievalEncoder,
    dataset: RetrievalSet,
    index_kind: str | None = None,
    top_k: int = MAP_AT,
    query_prompt_name: str | None = None,
    document_prompt_name: str | None = None,
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
) -> RetrievalResult:
    """Embed ``dataset`` (:func:`embed_set`), search and score it (:func:`search_and_score`).

    Args:
        model: A :class:`~sbert.SentenceEncoder` (its query and document prompts apply).
        dataset: From :func:`sbert.data.beir.read_beir` or :func:`~sbert.data.beir.proxy_set`.
        index_kind: ``None`` for exact search, else a kind of :class:`~sbert.index.VectorIndex`
            (``flat``, ``hnsw``, ``ivf``, ``ivfpq``, ``binary``, ...), built over the corpus vectors.
        top_k: Results kept per query (at least 100 for MAP@100 and Recall@100).
        query_prompt_name: Another prompt than the model's query one.
        document_prompt_name: Another prompt than the model's document one.

    Not run by the tests here: docs/guides/evaluation.md runs the same evaluation.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data.beir import proxy_set
        >>> result = evaluate_retrieval(SentenceEncoder.from_pretrained(), proxy_set("stsb-proxy"))  # doctest: +SKIP
        >>> round(result.metrics["ndcg@10"], 4)                                                      # doctest: +SKIP
        0.9492
    """
    embedded = embed_set(
        model, dataset, query_prompt_name, document_prompt_name, batch_size, show_progress_bar
    )
    return search_and_score(embedded, index_kind, top_k)


class RetrievalEvaluator:
    """NDCG@10 and the other retrieval metrics of a model on a retrieval set, for the
    :class:`~sbert.training.trainer.Trainer` (``sbert train file --dev-retrieval``): the best model by NDCG@10
    is kept. Exact search, the model's query and document prompts.

    Examples:
        >>> from sbert.data.beir import RetrievalSet
        >>> tiny = RetrievalSet("tiny", {"d0": "A man plays a guitar.", "d1": "It rains."},
        ...                     {"q0": "Who makes music?"}, {"q0": {"d0": 1}})
        >>> evaluator = RetrievalEvaluator(tiny)
        >>> evaluator.primary_metric
        'ndcg@10'
    """

    primary_metric = "ndcg@10"

    def __init__(
        self, dataset: RetrievalSet, batch_size: int = 32, show_progress_bar: bool | None = False
    ) -> None:
        if not dataset.qrels:
            raise ValueError(f"RetrievalEvaluator {dataset.name!r}: no judged query to evaluate")
        self.dataset, self.batch_size, self.show_progress_bar = dataset, batch_size, show_progress_bar

    def __call__(self, model: RetrievalEncoder) -> dict[str, float]:
        """``ndcg@10``, ``mrr@10``, ``map@100``, ``recall@1``, ``recall@10``, ``recall@100``."""
        embedded = embed_set(
            model, self.dataset, batch_size=self.batch_size, show_progress_bar=self.show_progress_bar
        )
        return search_and_score(embedded).metrics


def write_run(run: Run, path: str | Path, tag: str = "sbert") -> None:
    """Write ``run`` as a TREC run file (``qid Q0 docid rank score tag``) that trec_eval reads."""
    lines = [
        f"{query} Q0 {doc} {rank} {run[query][doc]!r} {tag}\n"
        for query in run
        for rank, doc in enumerate(ranked(run[query]), start=1)
    ]
    Path(path).write_text("".join(lines), encoding="utf-8")
