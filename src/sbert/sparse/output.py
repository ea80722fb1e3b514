"""What :meth:`~sbert.SparseEncoder.encode` returns: sentence-transformers' forms, or sbert's by name.

``encode`` gathers every batch's vectors into one CSR matrix in input order; :func:`finish` turns it
into what was asked for. sentence-transformers' flags: ``convert_to_sparse_tensor`` (a
``torch.sparse_coo`` tensor, else a dense one) and ``convert_to_tensor`` (one tensor, else a list of
1-D tensors). sbert's ``sparse_format`` (``"torch"``, ``"scipy"``, ``"pairs"``) wins over both.
One string in gives one vector out: a 1-D tensor, a 1-row CSR matrix or one pair.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import scipy.sparse
import torch

from sbert.base.empty import empty_answer
from sbert.base.inputs import tokenized
from sbert.model.encoding import EncodeRequest, sorted_batches
from sbert.sparse.vectors import SPARSE_FORMATS, convert, to_csr, to_torch


def encoded(model: Any, request: EncodeRequest, k: int | None) -> scipy.sparse.csr_matrix:
    """The vectors ``(n, model.dim)`` of the request's texts as one CSR matrix in input order, at most
    ``k`` non-zero each: length-sorted batches, each run by ``model.encode_token_ids``."""
    ids = tokenized(lambda texts: model.input_module.tokenize(texts).ids, request.texts)
    done, order = [], []
    for batch in sorted_batches([len(row) for row in ids], request.batch_size, request.show_progress_bar):
        done.append(to_csr(model.encode_token_ids([ids[i] for i in batch], k, request.prompt_length).cpu()))
        order.append(batch)
    if not done:
        return scipy.sparse.csr_matrix((0, model.dim), dtype=np.float32)
    return scipy.sparse.vstack(done, format="csr")[np.argsort(np.concatenate(order))]  # back in input order


def check_sparse_format(sparse_format: str | None) -> None:
    """``ValueError`` unless ``sparse_format`` is ``None`` or one of :data:`SPARSE_FORMATS`."""
    if sparse_format is not None and sparse_format not in SPARSE_FORMATS:
        raise ValueError(
            f"sparse_format {sparse_format!r} is not one of {', '.join(SPARSE_FORMATS)} (or None)"
        )


def check_max_active_dims(value: object) -> int | None:
    """``value`` as an ``int`` if it is a whole number of at least 1 (numpy's integers too), or ``None``:
    the one check of ``max_active_dims``, wherever it enters (``encode``, loading, the setter).

    Raises:
        ValueError: naming the value (0, a negative number, a float, a bool, a string...).

    Examples:
        >>> import numpy as np
        >>> check_max_active_dims(np.int64(3))
        3
    """
    if value is None:
        return None
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"max_active_dims must be a positive whole number or None, got {value!r}")
    return int(value)


def finish(
    matrix: scipy.sparse.csr_matrix,
    single: bool,
    sparse_format: str | None,
    convert_to_tensor: bool = True,
    convert_to_sparse_tensor: bool = True,
) -> Any:
    """``matrix`` (n, dim) in the form asked for (module docstring), on the CPU.

    Examples:
        >>> import numpy as np
        >>> matrix = scipy.sparse.csr_matrix(np.array([[0.0, 2.0, 0.0]], dtype=np.float32))
        >>> finish(matrix, single=True, sparse_format="pairs")
        (array([1]), array([2.], dtype=float32))
        >>> finish(matrix, single=False, sparse_format=None, convert_to_sparse_tensor=False)
        tensor([[0., 2., 0.]])
    """
    check_sparse_format(sparse_format)
    if sparse_format is not None:
        converted = convert(matrix, sparse_format)
        if not single:
            return converted
        return converted if sparse_format == "scipy" else converted[0]
    if not single and matrix.shape[0] == 0:  # sentence-transformers' (0,), not (0, dim)
        return empty_answer(convert_to_tensor, False, sparse=convert_to_sparse_tensor)
    # (n, dim): a coalesced sparse COO tensor, or a dense one
    vectors = to_torch(matrix) if convert_to_sparse_tensor else torch.from_numpy(matrix.toarray())
    if single:
        return vectors[0]
    return vectors if convert_to_tensor else list(vectors)
