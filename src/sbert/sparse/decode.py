"""Reading sparse vectors: each one's words and weights (:func:`decode`), and how sparse they are
(:func:`sparsity`), as sentence-transformers' ``SparseEncoder.decode`` and ``sparsity`` give them.

Both take any form :func:`~sbert.sparse.vectors.to_csr` takes (torch sparse or dense, scipy,
``(indices, values)`` pairs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import Tensor

from sbert.sparse.vectors import to_csr

TokenWeights = list[tuple[str, float]]


def is_single(vectors: Any) -> bool:
    """Whether ``vectors`` is one vector (a 1-D tensor or array, or one ``(indices, values)`` pair),
    for which :func:`decode` returns one list rather than a list per vector."""
    if isinstance(vectors, Tensor | np.ndarray):
        return vectors.ndim == 1
    return isinstance(vectors, tuple) and len(vectors) == 2 and np.ndim(vectors[0]) == 1


def decode(vectors: Any, tokenizer: Any, top_k: int | None = None) -> TokenWeights | list[TokenWeights]:
    """The ``(token, weight)`` pairs of each vector, heaviest first (``top_k``: the first that many).

    Args:
        vectors: One vector (then one list is returned) or several (a list per vector).
        tokenizer: Maps ids to tokens (``convert_ids_to_tokens``, or a Rust ``id_to_token``).
        top_k: Keep the ``top_k`` heaviest tokens of each vector; ``None``: every non-zero one.

    Raises:
        ValueError: ``top_k`` is not a positive whole number.

    Examples:
        >>> import torch
        >>> from tokenizers import Tokenizer, models
        >>> tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "rain": 1, "wet": 2}, unk_token="[UNK]"))
        >>> decode(torch.tensor([0.0, 1.5, 0.25]), tokenizer)
        [('rain', 1.5), ('wet', 0.25)]
    """
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0):
        raise ValueError(f"top_k must be a positive whole number or None, got {top_k!r}")
    single = is_single(vectors)
    matrix = to_csr([vectors] if single and isinstance(vectors, tuple) else vectors)
    to_tokens = getattr(tokenizer, "convert_ids_to_tokens", None)
    results = []
    for start, end in zip(matrix.indptr[:-1], matrix.indptr[1:], strict=True):
        values, ids = matrix.data[start:end], matrix.indices[start:end]
        order = np.argsort(-values, kind="stable")[:top_k]  # heaviest first; ties by token id
        chosen = ids[order].tolist()
        tokens = to_tokens(chosen) if to_tokens else [tokenizer.id_to_token(i) for i in chosen]
        results.append(list(zip(tokens, values[order].tolist(), strict=True)))
    return results[0] if single else results


def sparsity(vectors: Any, dim: int | None = None) -> dict[str, float]:
    """The mean number of non-zero weights per vector (``active_dims``) and the mean share of zero
    weights (``sparsity_ratio``), as sentence-transformers' ``SparseEncoder.sparsity``; ``dim``:
    the vectors' width where ``(indices, values)`` pairs do not tell it.

    Examples:
        >>> import torch
        >>> sparsity(torch.tensor([[0.0, 1.0, 0.0, 0.0], [2.0, 1.0, 0.0, 0.0]]))
        {'active_dims': 1.5, 'sparsity_ratio': 0.625}
    """
    matrix = to_csr([vectors] if is_single(vectors) and isinstance(vectors, tuple) else vectors, dim)
    rows, width = matrix.shape
    if rows == 0 or width == 0:
        return {"active_dims": 0.0, "sparsity_ratio": 1.0}
    active = float(np.diff(matrix.indptr).astype(np.float32).mean())
    return {"active_dims": active, "sparsity_ratio": 1.0 - active / width}
