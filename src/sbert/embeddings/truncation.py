"""Matryoshka truncation: the first d dimensions of each vector, made unit length again.

A Matryoshka-trained model (``sbert train file --matryoshka-dims``) packs the most information into
the first dimensions, so a prefix of its vectors still works on its own; any other model can be cut
the same way, at a cost that ``sbert evaluate ... --dimensions`` measures. The server's
``dimensions`` option, ``sbert index build --dimensions`` and the evaluations all cut here, so they
agree (OpenAI's ``dimensions`` does the same: keep the first d, rescale to unit length).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sbert.base.contracts import Encoder, SizedEncoder
from sbert.embeddings.similarity import ArrayLike


def check_dimensions(dimensions: int, full: int, whose: str = "the model's") -> None:
    """``ValueError`` unless ``1 <= dimensions <= full``, naming ``whose`` ``full`` dimensions they are.

    Examples:
        >>> check_dimensions(512, 384)
        Traceback (most recent call last):
        ...
        ValueError: dimensions must be between 1 and the model's 384, got 512
    """
    if isinstance(dimensions, bool) or not isinstance(dimensions, (int, np.integer)):
        raise TypeError(f"dimensions must be a whole number, got {dimensions!r}")
    if not 1 <= dimensions <= full:
        raise ValueError(f"dimensions must be between 1 and {whose} {full}, got {dimensions}")


def truncate_embeddings(vectors: ArrayLike, dimensions: int | None) -> np.ndarray:
    """The first ``dimensions`` of each vector (n, dim) or (dim,), unit length again; all of them for None.

    Examples:
        >>> truncate_embeddings(np.array([[3.0, 4.0, 12.0]]), 2)
        array([[0.6, 0.8]], dtype=float32)
    """
    array = np.asarray(vectors.detach().cpu() if hasattr(vectors, "detach") else vectors, dtype=np.float32)
    if dimensions is None:
        return array
    check_dimensions(dimensions, array.shape[-1], "the vectors'")
    cut = array[..., :dimensions]
    norms = np.linalg.norm(cut, axis=-1, keepdims=True)
    return cut / np.maximum(norms, 1e-12)


class PrefixViews:
    """One encoder seen at several prefix lengths, each sentence encoded once for all of them.

    :meth:`view` gives an object with ``encode(sentences, batch_size=...)`` (what the STS and SentEval
    evaluations take) whose vectors are the model's, truncated by :func:`truncate_embeddings`.

    Args:
        model: The encoder (its ``encode`` takes the options the views are given).
        dim: Its vectors' size (required unless the model gives ``dim``).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> views = PrefixViews(SentenceEncoder.from_pretrained())
        >>> views.view(64).encode(["A man plays guitar."]).shape
        (1, 64)
    """

    def __init__(self, model: Encoder, dim: int | None = None) -> None:
        if dim is None:
            if not isinstance(model, SizedEncoder):
                raise TypeError(f"{type(model).__name__} gives no dim: pass the size of its vectors")
            dim = model.dim
        self.model = model
        self.dim: int = dim
        self.name = getattr(model, "name", type(model).__name__)
        self._vectors: dict[str, np.ndarray] = {}

    def view(self, dimensions: int | None) -> _PrefixView:
        """The encoder at ``dimensions`` (None: the full vectors, as the model gives them)."""
        if dimensions is not None:
            check_dimensions(dimensions, self.dim, f"model {self.name}'s")
        return _PrefixView(self, dimensions)

    def vectors(self, sentences: Sequence[str], **options: Any) -> np.ndarray:
        """The model's full vectors of ``sentences`` (n, dim), encoding only those not seen before."""
        missing = list(dict.fromkeys(s for s in sentences if s not in self._vectors))
        if missing:
            encoded = np.asarray(self.model.encode(missing, **options), dtype=np.float32)
            self._vectors.update(zip(missing, encoded))
        if not sentences:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vectors[s] for s in sentences])


class _PrefixView:
    def __init__(self, views: PrefixViews, dimensions: int | None) -> None:
        self.views, self.dimensions = views, dimensions
        self.dim = dimensions or views.dim

    def encode(self, sentences: Sequence[str], batch_size: int = 32, **options: Any) -> np.ndarray:
        vectors = self.views.vectors(list(sentences), batch_size=batch_size, **options)
        return vectors if self.dimensions is None else truncate_embeddings(vectors, self.dimensions)
