"""Similarity between sentence vectors: cosine, dot, Euclidean and Manhattan, pairwise or as a matrix.

Distances are returned negated, so that for every function a larger value means more similar. The
result has the inputs' kind: numpy arrays in (what ``encode`` returns), a float32 numpy array out;
a torch tensor on either side, a tensor out (gradients flow, as the losses need).

One registry, :data:`MATRIX` and :data:`PAIRWISE` by name, serves both faces: sbert's functions
above, and sentence-transformers' score functions (``util.cos_sim``, ``util.dot_score``...; what
``SentenceEncoder.similarity()`` computes by ``similarity_fn_name``: :func:`score`), which are the
same functions with numpy, lists or tensors in and always a tensor out.

Examples:
    >>> cos_sim(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 2.0]]))
    tensor([[1., 0.]])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, cast, overload

import numpy as np
import torch
from torch import Tensor

from sbert.base.options import METRICS, choice

ArrayLike = np.ndarray | Tensor


class Similarity(Protocol):
    """A similarity function: numpy in, numpy out; a tensor in, a tensor out."""

    @overload
    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...  # type: ignore[overload-overlap]
    @overload
    def __call__(self, a: ArrayLike, b: ArrayLike) -> Tensor: ...


def _as_2d(x: ArrayLike) -> Tensor:
    tensor = torch.as_tensor(x).float()
    return tensor.unsqueeze(0) if tensor.dim() == 1 else tensor


def _keeps_kind(function: Callable[[Tensor, Tensor], Tensor]) -> Similarity:
    """Compute on 2-d float tensors; hand numpy back when neither input is a tensor."""

    @functools.wraps(function)
    def similarity(a: ArrayLike, b: ArrayLike) -> ArrayLike:
        result = function(_as_2d(a), _as_2d(b))
        if isinstance(a, Tensor) or isinstance(b, Tensor):
            return result
        return result.numpy()

    return cast(Similarity, similarity)


@_keeps_kind
def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """Cosine similarity of every row of ``a`` with every row of ``b``: (len(a), len(b)).

    Examples:
        >>> cosine_matrix(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 2.0]]))
        array([[1., 0.]], dtype=float32)
        >>> cosine_matrix(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 2.0]]))
        tensor([[0.]])
    """
    return torch.nn.functional.normalize(a, dim=1) @ torch.nn.functional.normalize(b, dim=1).T


@_keeps_kind
def dot_matrix(a: Tensor, b: Tensor) -> Tensor:
    """Dot product of every row of ``a`` with every row of ``b``."""
    return a @ b.T


@_keeps_kind
def euclidean_matrix(a: Tensor, b: Tensor) -> Tensor:
    """Negated Euclidean distance of every row of ``a`` to every row of ``b``."""
    return -torch.cdist(a, b, p=2.0)


@_keeps_kind
def manhattan_matrix(a: Tensor, b: Tensor) -> Tensor:
    """Negated Manhattan distance of every row of ``a`` to every row of ``b``."""
    return -torch.cdist(a, b, p=1.0)


@_keeps_kind
def cosine_pairwise(a: Tensor, b: Tensor) -> Tensor:
    """Cosine similarity of row i of ``a`` with row i of ``b``: (n,)."""
    return torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-12)


@_keeps_kind
def dot_pairwise(a: Tensor, b: Tensor) -> Tensor:
    """Dot product of row i of ``a`` with row i of ``b``."""
    return (a * b).sum(dim=1)


@_keeps_kind
def euclidean_pairwise(a: Tensor, b: Tensor) -> Tensor:
    """Negated Euclidean distance of row i of ``a`` to row i of ``b``."""
    return -(a - b).norm(p=2, dim=1)


@_keeps_kind
def manhattan_pairwise(a: Tensor, b: Tensor) -> Tensor:
    """Negated Manhattan distance of row i of ``a`` to row i of ``b``."""
    return -(a - b).abs().sum(dim=1)


MATRIX: dict[str, Similarity] = {
    "cosine": cosine_matrix,
    "dot": dot_matrix,
    "euclidean": euclidean_matrix,
    "manhattan": manhattan_matrix,
}
PAIRWISE: dict[str, Similarity] = {
    "cosine": cosine_pairwise,
    "dot": dot_pairwise,
    "euclidean": euclidean_pairwise,
    "manhattan": manhattan_pairwise,
}


def similarity_function(name: str, pairwise: bool = False) -> Similarity:
    """Look a similarity up by name; ``ValueError`` lists the choices."""
    table = PAIRWISE if pairwise else MATRIX
    return table[choice(name, METRICS, "similarity")]


# sentence-transformers' face of the same registry: numpy, lists or tensors in, always a tensor out.
ScoreFunction = Callable[[Any, Any], Tensor]


def score_input(x: Any) -> Tensor:
    """A float tensor, one vector made a row: what sentence-transformers' scores take."""
    if isinstance(x, list) and x and isinstance(x[0], Tensor):
        x = torch.stack(x)
    tensor = x if isinstance(x, Tensor) else torch.as_tensor(np.asarray(x))
    if not tensor.is_floating_point():
        tensor = tensor.float()
    return tensor.unsqueeze(0) if tensor.dim() == 1 else tensor


def score(name: str, a: Any, b: Any, pairwise: bool = False) -> Tensor:
    """sentence-transformers' score of ``a`` and ``b`` by similarity name (``"cosine"``, ``"dot"``,
    ``"euclidean"``, ``"manhattan"``): what ``SentenceEncoder.similarity()`` and
    ``similarity_pairwise()`` compute, from the one registry.

    Examples:
        >>> score("dot", [[1.0, 2.0]], [[3.0, 4.0]])
        tensor([[11.]])
    """
    table = PAIRWISE if pairwise else MATRIX
    return cast(Tensor, table[name](score_input(a), score_input(b)))


def _scores(name: str, pairwise: bool = False) -> ScoreFunction:
    """The registry's function ``name`` as sentence-transformers' score function of that name."""
    function = (PAIRWISE if pairwise else MATRIX)[name]

    def scored(a: Any, b: Any) -> Tensor:
        return cast(Tensor, function(score_input(a), score_input(b)))

    scored.__doc__ = function.__doc__
    return scored


cos_sim = _scores("cosine")
dot_score = _scores("dot")
euclidean_sim = _scores("euclidean")
manhattan_sim = _scores("manhattan")
pairwise_cos_sim = _scores("cosine", pairwise=True)
pairwise_dot_score = _scores("dot", pairwise=True)
pairwise_euclidean_sim = _scores("euclidean", pairwise=True)
pairwise_manhattan_sim = _scores("manhattan", pairwise=True)
for _name, _function in list(globals().items()):  # util.cos_sim.__name__ is "cos_sim", as in ST
    if _name.endswith(("_sim", "_score")) and callable(_function):
        _function.__name__ = _function.__qualname__ = _name
