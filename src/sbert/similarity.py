"""Similarity between sentence vectors: cosine, dot, Euclidean and Manhattan, pairwise or as a matrix.

Distances are returned negated, so that for every function a larger value means more similar.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

ArrayLike = np.ndarray | Tensor


def _as_2d(x: ArrayLike) -> Tensor:
    tensor = torch.as_tensor(x).float()
    return tensor.unsqueeze(0) if tensor.dim() == 1 else tensor


def cosine_matrix(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Cosine similarity of every row of ``a`` with every row of ``b``: (len(a), len(b)).

    Example:
        >>> cosine_matrix(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 2.0]]))
        tensor([[1., 0.]])
    """
    a, b = _as_2d(a), _as_2d(b)
    return torch.nn.functional.normalize(a, dim=1) @ torch.nn.functional.normalize(b, dim=1).T


def dot_matrix(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Dot product of every row of ``a`` with every row of ``b``."""
    return _as_2d(a) @ _as_2d(b).T


def euclidean_matrix(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Negated Euclidean distance of every row of ``a`` to every row of ``b``."""
    return -torch.cdist(_as_2d(a), _as_2d(b), p=2.0)


def manhattan_matrix(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Negated Manhattan distance of every row of ``a`` to every row of ``b``."""
    return -torch.cdist(_as_2d(a), _as_2d(b), p=1.0)


def cosine_pairwise(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Cosine similarity of row i of ``a`` with row i of ``b``: (n,)."""
    return torch.nn.functional.cosine_similarity(_as_2d(a), _as_2d(b), dim=1, eps=1e-12)


def dot_pairwise(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Dot product of row i of ``a`` with row i of ``b``."""
    return (_as_2d(a) * _as_2d(b)).sum(dim=1)


def euclidean_pairwise(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Negated Euclidean distance of row i of ``a`` to row i of ``b``."""
    return -(_as_2d(a) - _as_2d(b)).norm(p=2, dim=1)


def manhattan_pairwise(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Negated Manhattan distance of row i of ``a`` to row i of ``b``."""
    return -(_as_2d(a) - _as_2d(b)).abs().sum(dim=1)


MATRIX: dict[str, Callable[[ArrayLike, ArrayLike], Tensor]] = {
    "cosine": cosine_matrix,
    "dot": dot_matrix,
    "euclidean": euclidean_matrix,
    "manhattan": manhattan_matrix,
}
PAIRWISE: dict[str, Callable[[ArrayLike, ArrayLike], Tensor]] = {
    "cosine": cosine_pairwise,
    "dot": dot_pairwise,
    "euclidean": euclidean_pairwise,
    "manhattan": manhattan_pairwise,
}


def similarity_function(name: str, pairwise: bool = False) -> Callable[[ArrayLike, ArrayLike], Tensor]:
    """Look a similarity up by name; ``ValueError`` lists the choices."""
    table = PAIRWISE if pairwise else MATRIX
    if name not in table:
        raise ValueError(f"unknown similarity {name!r}; choose one of {', '.join(table)}")
    return table[name]
