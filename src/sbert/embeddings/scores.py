"""sentence-transformers' score functions (``util.cos_sim``, ``util.dot_score``...): sbert's
similarities (:mod:`sbert.embeddings.similarity`) with numpy, lists or tensors in and a tensor out, and the
tables :class:`~sbert.SentenceEncoder` ``similarity()`` reads by ``similarity_fn_name``.

Examples:
    >>> import numpy as np
    >>> cos_sim(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 2.0]]))
    tensor([[1., 0.]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sbert.embeddings.similarity import (
    cosine_matrix,
    cosine_pairwise,
    dot_matrix,
    dot_pairwise,
    euclidean_matrix,
    euclidean_pairwise,
    manhattan_matrix,
    manhattan_pairwise,
)

ScoreFunction = Callable[[Any, Any], Tensor]


def score_input(x: Any) -> Tensor:
    """A float tensor, one vector made a row: what sentence-transformers' scores take."""
    if isinstance(x, list) and x and isinstance(x[0], Tensor):
        x = torch.stack(x)
    tensor = x if isinstance(x, Tensor) else torch.as_tensor(np.asarray(x))
    if not tensor.is_floating_point():
        tensor = tensor.float()
    return tensor.unsqueeze(0) if tensor.dim() == 1 else tensor


def _scores(function: Callable[[Tensor, Tensor], Tensor]) -> ScoreFunction:
    """sbert's similarity as sentence-transformers': always a tensor out."""

    def score(a: Any, b: Any) -> Tensor:
        return function(score_input(a), score_input(b))

    score.__doc__ = function.__doc__
    return score


cos_sim = _scores(cosine_matrix)
dot_score = _scores(dot_matrix)
euclidean_sim = _scores(euclidean_matrix)
manhattan_sim = _scores(manhattan_matrix)
pairwise_cos_sim = _scores(cosine_pairwise)
pairwise_dot_score = _scores(dot_pairwise)
pairwise_euclidean_sim = _scores(euclidean_pairwise)
pairwise_manhattan_sim = _scores(manhattan_pairwise)
for _name, _function in list(globals().items()):
    if _name.endswith(("_sim", "_score")) and callable(_function):
        _function.__name__ = _function.__qualname__ = _name

# similarity_fn_name → function, for SentenceEncoder.similarity / similarity_pairwise.
MATRIX: dict[str, ScoreFunction] = {
    "cosine": cos_sim,
    "dot": dot_score,
    "euclidean": euclidean_sim,
    "manhattan": manhattan_sim,
}
PAIRWISE: dict[str, ScoreFunction] = {
    "cosine": pairwise_cos_sim,
    "dot": pairwise_dot_score,
    "euclidean": pairwise_euclidean_sim,
    "manhattan": pairwise_manhattan_sim,
}
