"""Sparse sentence vectors in the three forms users hand around, and the conversions between them.

A sparse encoder's vector has one dimension per vocabulary word and a few hundred non-zero weights.
sentence-transformers returns them as ``torch.sparse_coo`` tensors; inverted indexes and scipy want
CSR rows; TEI's ``/embed_sparse`` and search engines want ``(indices, values)`` pairs. Every sbert
function that takes sparse vectors takes any of these (and dense arrays) through :func:`to_csr`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import scipy.sparse
import torch
from torch import Tensor

SparseFormat = Literal["torch", "scipy", "pairs"]
SPARSE_FORMATS: tuple[str, ...] = ("torch", "scipy", "pairs")
Pairs = tuple[np.ndarray, np.ndarray]  # (indices int64, values float32) of one vector, indices ascending


def to_csr(vectors: Any, dim: int | None = None) -> scipy.sparse.csr_matrix:
    """``vectors`` (n, dim) as a float32 CSR matrix with sorted indices and no explicit zeros.

    Takes a torch tensor (sparse COO/CSR or dense, 1-D for one vector), a scipy sparse matrix, a
    numpy array, or a list of ``(indices, values)`` pairs (then ``dim`` gives the width).

    Examples:
        >>> import torch
        >>> to_csr(torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0]]).to_sparse()).toarray().tolist()
        [[0.0, 2.0, 0.0], [1.0, 0.0, 0.0]]
        >>> to_csr([([2], [0.5])], dim=4).toarray().tolist()
        [[0.0, 0.0, 0.5, 0.0]]
    """
    if isinstance(vectors, Tensor):
        matrix = _torch_to_csr(vectors)
    elif scipy.sparse.issparse(vectors):
        matrix = scipy.sparse.csr_matrix(vectors, dtype=np.float32)
    elif isinstance(vectors, np.ndarray):
        matrix = scipy.sparse.csr_matrix(np.atleast_2d(vectors).astype(np.float32, copy=False))
    elif isinstance(vectors, Sequence):
        matrix = _pairs_to_csr(vectors, dim)
    else:
        raise TypeError(
            f"sparse vectors must be a torch tensor, a scipy sparse matrix, a numpy array or a list of "
            f"(indices, values) pairs, not {type(vectors).__name__}"
        )
    if dim is not None and matrix.shape[1] != dim:
        raise ValueError(f"sparse vectors have {matrix.shape[1]} dimensions, expected {dim}")
    matrix.eliminate_zeros()
    matrix.sort_indices()
    return matrix


def _torch_to_csr(tensor: Tensor) -> scipy.sparse.csr_matrix:
    tensor = tensor.detach().cpu()
    if tensor.dim() == 1:
        tensor = tensor.unsqueeze(0)
    if tensor.layout == torch.strided:
        return scipy.sparse.csr_matrix(tensor.float().numpy())
    coo = tensor.to_sparse_coo().coalesce()
    rows, cols = coo.indices().numpy()
    values = coo.values().float().numpy()
    return scipy.sparse.csr_matrix((values, (rows, cols)), shape=tuple(coo.shape), dtype=np.float32)


def _pairs_to_csr(pairs: Sequence[Any], dim: int | None) -> scipy.sparse.csr_matrix:
    indptr, indices, values = [0], [], []
    for row, pair in enumerate(pairs):
        if len(pair) != 2:
            raise ValueError(
                f"sparse vector {row}: expected an (indices, values) pair, got {len(pair)} items"
            )
        ids, weights = np.asarray(pair[0], dtype=np.int64), np.asarray(pair[1], dtype=np.float32)
        if ids.shape != weights.shape or ids.ndim != 1:
            raise ValueError(
                f"sparse vector {row}: indices {ids.shape} and values {weights.shape} must be 1-D and of one length"
            )
        if ids.size and (ids.min() < 0 or (dim is not None and ids.max() >= dim)):
            raise ValueError(f"sparse vector {row}: an index is outside 0..{(dim or 0) - 1}")
        indices.append(ids)
        values.append(weights)
        indptr.append(indptr[-1] + ids.size)
    if dim is None:
        dim = int(max((ids.max() + 1 for ids in indices if ids.size), default=0))
    return scipy.sparse.csr_matrix(
        (
            np.concatenate(values) if values else np.zeros(0, np.float32),
            np.concatenate(indices) if indices else np.zeros(0, np.int64),
            np.asarray(indptr),
        ),
        shape=(len(pairs), dim),
        dtype=np.float32,
    )


def to_pairs(vectors: Any) -> list[Pairs]:
    """One ``(indices, values)`` pair per row, indices ascending, zeros left out."""
    matrix = to_csr(vectors)
    return [
        (matrix.indices[start:end].astype(np.int64), matrix.data[start:end].copy())
        for start, end in zip(matrix.indptr[:-1], matrix.indptr[1:], strict=True)
    ]


def to_torch(vectors: Any) -> Tensor:
    """``vectors`` as a coalesced float32 ``torch.sparse_coo`` tensor (n, dim), as sentence-transformers returns."""
    matrix = to_csr(vectors).tocoo()
    indices = torch.from_numpy(np.vstack([matrix.row, matrix.col]).astype(np.int64))
    # CSR order is row-major with unique indices, so the tensor is already coalesced and valid.
    return torch.sparse_coo_tensor(
        indices, torch.from_numpy(matrix.data), matrix.shape, is_coalesced=True, check_invariants=False
    )


def convert(vectors: Any, sparse_format: str) -> Any:
    """``vectors`` in ``sparse_format``: ``"torch"`` (sparse COO), ``"scipy"`` (CSR) or ``"pairs"``."""
    if sparse_format == "torch":
        return to_torch(vectors)
    if sparse_format == "scipy":
        return to_csr(vectors)
    if sparse_format == "pairs":
        return to_pairs(vectors)
    raise ValueError(f"sparse_format {sparse_format!r} is not one of {', '.join(SPARSE_FORMATS)}")


def keep_top_k(dense: Tensor, k: int | None) -> Tensor:
    """``dense`` (batch, dim) with all but each row's ``k`` largest weights by size set to zero
    (``max_active_dims``; by size, not value, as sentence-transformers keeps a negative static weight).

    Raises:
        ValueError: ``k`` is not a positive whole number.
    """
    if k is None:
        return dense
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"max_active_dims must be a positive whole number or None, got {k!r}")
    if k >= dense.shape[-1]:
        return dense
    indices = dense.abs().topk(k, dim=-1).indices  # (batch, k)
    return torch.zeros_like(dense).scatter_(-1, indices, dense.gather(-1, indices))


def active_dims(vectors: Any) -> np.ndarray:
    """The number of non-zero weights of each vector."""
    return np.diff(to_csr(vectors).indptr)
