"""Scores of sparse vectors: dot products (SPLADE's similarity) or cosines, all pairs or row by row.

Computed on CSR matrices (:func:`~sbert.sparse.vectors.to_csr`, any form in), so two sets of
vocabulary-wide vectors never become dense; the scores come back as float32 torch tensors, as
sentence-transformers' ``SparseEncoder.similarity`` returns them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse
import torch
from torch import Tensor

from sbert.sparse.vectors import to_csr

SIMILARITY_FUNCTIONS = ("dot", "cosine")


def scores(
    vectors1: Any, vectors2: Any, function: str = "dot", dim: int | None = None, pairwise: bool = False
) -> Tensor:
    """Scores (n1, n2) of every vector of ``vectors1`` with every one of ``vectors2``, or (n,) of
    ``vectors1[i]`` with ``vectors2[i]`` (``pairwise``); ``dim``: the width both must have.

    Raises:
        ValueError: ``function`` is not ``dot`` or ``cosine``; a width is not ``dim``.

    Examples:
        >>> import torch
        >>> a = torch.tensor([[0.0, 2.0, 1.0]]).to_sparse()
        >>> scores(a, torch.tensor([[0.0, 1.0, 0.0], [3.0, 0.0, 0.0]]))
        tensor([[2., 0.]])
    """
    if function not in SIMILARITY_FUNCTIONS:
        raise ValueError(
            f"similarity {function!r}: sparse vectors score with {', '.join(SIMILARITY_FUNCTIONS)}"
        )
    left, right = (_prepared(vectors, function, dim) for vectors in (vectors1, vectors2))
    if pairwise:
        return torch.from_numpy(np.asarray(left.multiply(right).sum(axis=1), dtype=np.float32).ravel())
    return torch.from_numpy(np.asarray((left @ right.T).todense(), dtype=np.float32))


def _prepared(vectors: Any, function: str, dim: int | None) -> scipy.sparse.csr_matrix:
    matrix = to_csr(vectors, dim)
    if function == "cosine":
        norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
        matrix = scipy.sparse.diags(1 / np.maximum(norms, 1e-12)) @ matrix
    return matrix.tocsr()
