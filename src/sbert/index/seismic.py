"""Approximate sparse search with Seismic (``pyseismic-lsr``), the engine sentence-transformers' examples use.

Seismic keeps, per vocabulary dimension, the documents with the largest weights in blocks, each with a
summary vector; a query visits the blocks of its ``query_cut`` heaviest dimensions whose summary
scores above ``heap_factor`` × the current k-th best. So a larger ``query_cut`` and a *smaller*
``heap_factor`` are more exact and slower (measured at 100k documents: recall@10 0.94 at the
defaults 10 / 0.7, 0.987 at 10 / 0.5, 0.81 at 10 / 0.9). It is approximate: the recall against exact
search is measured (``benchmarks/sparse_search.py``), not guaranteed.

Documents are added by their integer dimensions (CSR layout), named by their position in the index;
a document with no active dimension is not added (it cannot score above 0).
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

# Seismic's own defaults for building (SeismicIndex.build_from_dataset), written out so a manifest
# records what the index was built with.
BUILD_DEFAULTS: dict[str, float | int] = {
    "n_postings": 3500,
    "centroid_fraction": 0.1,
    "min_cluster_size": 2,
    "summary_energy": 0.4,
    "max_fraction": 1.5,
    "doc_cut": 15,
}
# Search defaults as sentence-transformers' semantic_search_seismic sets them.
SEARCH_DEFAULTS: dict[str, float | int] = {"query_cut": 10, "heap_factor": 0.7}
INDEX_SUFFIX = ".index.seismic"  # what SeismicIndex.save appends to the path it is given


def require_seismic() -> Any:
    """The ``seismic`` module, or an ImportError that says how to install it."""
    try:
        import seismic
    except ImportError as error:
        raise ImportError(
            "kind='seismic' needs Seismic: pip install 'sbert[sparse]' (or pip install pyseismic-lsr)"
        ) from error
    return seismic


@contextmanager
def _progress_to_stderr() -> Iterator[None]:
    """Seismic prints its progress on the process's stdout (from Rust, past ``sys.stdout``); sent to
    stderr instead, so that ``sbert search --json`` and other stdout readers get only their data."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def version() -> str | None:
    """The installed pyseismic-lsr version (recorded in the manifest), or None."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("pyseismic-lsr")
    except PackageNotFoundError:
        return None


def build(matrix: scipy.sparse.csr_matrix, params: dict[str, Any]) -> Any:
    """A ``seismic.SeismicIndex`` of the rows of ``matrix`` (n, dim), each named by its row number.

    Raises:
        ValueError: every row is empty (Seismic cannot index nothing).
    """
    seismic = require_seismic()
    if matrix.nnz == 0:
        raise ValueError("every sparse vector is empty: Seismic has nothing to index")
    dataset = seismic.SeismicDataset(matrix.shape[1])
    dataset.add_documents_by_id(
        [str(row) for row in range(matrix.shape[0])],
        matrix.indices.astype(np.int64),
        matrix.data.astype(np.float32),
        matrix.indptr.astype(np.int64),
    )
    settings = {key: value for key, value in params.items() if key in BUILD_DEFAULTS}
    with _progress_to_stderr():
        return seismic.SeismicIndex.build_from_dataset(dataset, **settings)


def checked_search_settings(query_cut: int | None, heap_factor: float | None) -> dict[str, Any]:
    """The search settings given (``None``: the index's), each checked: Seismic takes a negative
    ``query_cut`` as a huge unsigned one (an OverflowError) and a NaN ``heap_factor`` silently.

    Examples:
        >>> checked_search_settings(5, 0.0)
        {'query_cut': 5, 'heap_factor': 0.0}
        >>> checked_search_settings(0, None)
        Traceback (most recent call last):
        ...
        ValueError: query_cut must be a whole number of at least 1, got 0
    """
    settings: dict[str, Any] = {}
    if query_cut is not None:
        if isinstance(query_cut, bool) or not isinstance(query_cut, numbers.Integral) or query_cut < 1:
            raise ValueError(f"query_cut must be a whole number of at least 1, got {query_cut!r}")
        settings["query_cut"] = int(query_cut)
    if heap_factor is not None:
        real = isinstance(heap_factor, numbers.Real) and not isinstance(heap_factor, bool)
        if not real or not math.isfinite(heap_factor) or heap_factor < 0:
            raise ValueError(f"heap_factor must be a finite number of at least 0, got {heap_factor!r}")
        settings["heap_factor"] = float(heap_factor)
    return settings


def search(
    engine: Any, queries: scipy.sparse.csr_matrix, top_k: int, params: dict[str, Any]
) -> list[list[tuple[int, float]]]:
    """``(row, score)`` of up to ``top_k`` documents per query, best first (equal scores: lower row
    first, as the exact search orders them). A query sharing no dimension with any document gets []."""
    seismic = require_seismic()
    string = seismic.get_seismic_string()
    settings = {**SEARCH_DEFAULTS, **{k: v for k, v in params.items() if k in SEARCH_DEFAULTS}}
    components, values = [], []
    for start, end in zip(queries.indptr[:-1], queries.indptr[1:], strict=True):
        # Seismic names a dimension added by id by its decimal string.
        components.append(np.array([str(i) for i in queries.indices[start:end]], dtype=string))
        values.append(queries.data[start:end].astype(np.float32))
    found = engine.batch_search(
        queries_ids=np.array([str(i) for i in range(queries.shape[0])], dtype=string),
        query_components=components,
        query_values=values,
        k=top_k,
        query_cut=int(settings["query_cut"]),
        heap_factor=float(settings["heap_factor"]),
    )
    results: list[list[tuple[int, float]]] = [[] for _ in range(queries.shape[0])]
    # Results come back out of query order, and a query with no match as [] with no id to place it by.
    for hits in found:
        if hits:
            pairs = [(int(doc), float(score)) for _, score, doc in hits]
            results[int(hits[0][0])] = sorted(pairs, key=lambda pair: (-pair[1], pair[0]))
    return results


def save(engine: Any, folder: Path, stem: str) -> Path:
    """Write the engine with Seismic's own serialiser; returns the file it wrote."""
    with _progress_to_stderr():
        engine.save(str(folder / stem))
    return folder / f"{stem}{INDEX_SUFFIX}"


def load(path: Path) -> Any:
    """Read an engine :func:`save` wrote."""
    engine = require_seismic()
    with _progress_to_stderr():
        return engine.SeismicIndex.load(str(path))
