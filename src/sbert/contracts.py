"""The ground floor: the contracts every layer above types against, importing nothing of sbert.

An evaluator, a store, an index, a server handler or a loss needs *an encoder*, not sbert's
:class:`~sbert.SentenceEncoder` in particular (a GloVe baseline or a wrapped model serve as well), so
they type their model as :class:`Encoder` and never as ``Any``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    from torch import Tensor


class Encoder(Protocol):
    """Anything with ``encode(list[str]) -> (n, dim)``: sbert models and the baselines alike."""

    def encode(self, sentences: list[str], *, batch_size: int = ...) -> np.ndarray | Tensor: ...
