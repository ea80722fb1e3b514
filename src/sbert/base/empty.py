"""What sentence-transformers 6.2 hands back for no inputs, for every kind: ``encode([])`` and
``predict([])`` do not keep the (0, dim) or (0, num_labels) shape a non-empty call has.

Its ``encode`` and ``predict`` return ``np.array([])`` (shape ``(0,)``, float64) for a numpy answer,
``torch.tensor([])`` (``(0,)``, float32; a sparse encoder's as ``torch.sparse_coo``) for a tensor
answer, and ``[]`` for a list. sbert answers the same, so code written against one runs on the other.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def empty_answer(
    convert_to_tensor: bool, convert_to_numpy: bool = True, *, sparse: bool = False, device: Any = None
) -> Any:
    """sentence-transformers' answer to no inputs in the form asked for (module docstring).

    Examples:
        >>> empty_answer(False).shape, empty_answer(False).dtype
        ((0,), dtype('float64'))
        >>> empty_answer(True, sparse=True).layout, tuple(empty_answer(True).shape)
        (torch.sparse_coo, (0,))
        >>> empty_answer(False, convert_to_numpy=False)
        []
    """
    if convert_to_tensor:
        tensor = torch.tensor([], device=device)  # (0,) float32
        return tensor.to_sparse() if sparse else tensor
    return np.array([]) if convert_to_numpy else []
