"""Embedding quantization: smaller vectors for large corpora.

- ``float16``: half the bytes, cosines within about 1e-3.
- ``int8`` / ``uint8``: one byte a dimension. Each dimension's range comes from *calibration
  vectors* (a sample of the corpus), is stored beside the codes and reused for every later batch and
  query: ranges taken from the batch being quantized would give the same sentence different codes in
  different batches.
- ``binary`` / ``ubinary``: one bit a dimension (``x > 0``), packed eight to a byte (``int8`` codes
  offset by -128, as sentence-transformers writes them, or ``uint8``). Compared by Hamming distance.

Example:
    >>> import numpy as np
    >>> vectors = np.random.default_rng(0).normal(size=(1000, 8)).astype("float32")
    >>> ranges = QuantizationRanges.from_vectors(vectors)
    >>> codes = quantize_embeddings(vectors[:2], "int8", ranges)
    >>> codes.dtype, codes.shape
    (dtype('int8'), (2, 8))
    >>> quantize_embeddings(vectors[:2], "ubinary").shape  # 8 dimensions, one byte
    (2, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

QUANTIZATION_PRECISIONS = ("float32", "float16", "int8", "uint8", "binary", "ubinary")
_LEVELS = 255  # steps between a dimension's minimum and maximum in one byte


@dataclass(frozen=True)
class QuantizationRanges:
    """Per-dimension minimum and maximum that map floats onto one-byte codes.

    Attributes:
        minimum: ``(dim,)`` float32, the lowest calibration value of each dimension.
        maximum: ``(dim,)`` float32, the highest.
        model_fingerprint: The fingerprint of the model that made the calibration vectors
            (:func:`sbert.identity.model_identity`), checked when the ranges are reused.
    """

    minimum: np.ndarray
    maximum: np.ndarray
    model_fingerprint: str | None = None

    @classmethod
    def from_vectors(
        cls, calibration: np.ndarray, model_fingerprint: str | None = None
    ) -> QuantizationRanges:
        """Ranges from calibration vectors ``(n, dim)``: a sample of the corpus, a few thousand suffice."""
        calibration = _as_matrix(calibration, "calibration vectors")
        if len(calibration) < 2:
            raise ValueError(f"calibration needs at least 2 vectors, got {len(calibration)}")
        return cls(
            calibration.min(axis=0).astype(np.float32),
            calibration.max(axis=0).astype(np.float32),
            model_fingerprint,
        )

    @property
    def dim(self) -> int:
        return int(self.minimum.shape[0])

    @property
    def step(self) -> np.ndarray:
        """``(dim,)`` float32: the float width of one code step (never zero)."""
        width = (self.maximum - self.minimum) / _LEVELS
        return np.maximum(width, np.finfo(np.float32).tiny).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        return {
            "minimum": self.minimum.tolist(),
            "maximum": self.maximum.tolist(),
            "model_fingerprint": self.model_fingerprint,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "quantization ranges") -> QuantizationRanges:
        try:
            minimum = np.asarray(data["minimum"], dtype=np.float32)
            maximum = np.asarray(data["maximum"], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{where}: not a quantization range record ({error})") from None
        if minimum.ndim != 1 or minimum.shape != maximum.shape or not np.all(maximum >= minimum):
            raise ValueError(
                f"{where}: minimum and maximum must be equal-length lists with maximum ≥ minimum"
            )
        return cls(minimum, maximum, data.get("model_fingerprint"))

    def check(
        self, dim: int, model_fingerprint: str | None = None, where: str = "quantization ranges"
    ) -> None:
        """Refuse vectors of another dimension or from another model than the calibration's."""
        if dim != self.dim:
            raise ValueError(f"{where}: the ranges are for {self.dim}-d vectors, got {dim}-d vectors")
        if model_fingerprint and self.model_fingerprint and model_fingerprint != self.model_fingerprint:
            raise ValueError(
                f"{where}: the ranges were calibrated on another model's vectors "
                f"(fingerprint {self.model_fingerprint[:12]}…, given {model_fingerprint[:12]}…)"
            )


def quantize_embeddings(
    vectors: np.ndarray, precision: str, ranges: QuantizationRanges | None = None
) -> np.ndarray:
    """Codes for ``vectors`` ``(n, dim)`` (or one ``(dim,)`` vector) in ``precision``.

    Args:
        vectors: Float sentence vectors.
        precision: One of :data:`QUANTIZATION_PRECISIONS`.
        ranges: Required for ``int8`` and ``uint8``: see :class:`QuantizationRanges`.

    Returns:
        ``float32``/``float16``: ``(n, dim)``; ``int8``/``uint8``: ``(n, dim)``; ``binary`` (int8)
        and ``ubinary`` (uint8): ``(n, ceil(dim / 8))`` packed bits.

    Raises:
        ValueError: an unknown precision, missing ``ranges`` for int8/uint8, or a dimension mismatch.
    """
    single = np.ndim(vectors) == 1
    matrix = _as_matrix(np.atleast_2d(vectors), "vectors")
    codes = _quantize(matrix, precision, ranges)
    return codes[0] if single else codes


def dequantize_embeddings(
    codes: np.ndarray, precision: str, ranges: QuantizationRanges | None = None
) -> np.ndarray:
    """Approximate float32 vectors back from ``int8``/``uint8`` codes (the centre of each code's step)."""
    if precision in ("float32", "float16"):
        return np.asarray(codes, dtype=np.float32)
    if precision not in ("int8", "uint8"):
        raise ValueError(f"only int8 and uint8 codes can be turned back into vectors, not {precision!r}")
    ranges = _require(ranges, precision)
    ranges.check(codes.shape[-1])
    levels = codes.astype(np.float32) + (128.0 if precision == "int8" else 0.0)
    return (ranges.minimum + levels * ranges.step).astype(np.float32)


def _quantize(matrix: np.ndarray, precision: str, ranges: QuantizationRanges | None) -> np.ndarray:
    if precision == "float32":
        return matrix.astype(np.float32, copy=False)
    if precision == "float16":
        return matrix.astype(np.float16)
    if precision in ("binary", "ubinary"):
        packed = np.packbits(matrix > 0, axis=-1)  # (n, ceil(dim / 8)) uint8
        return (packed.astype(np.int16) - 128).astype(np.int8) if precision == "binary" else packed
    if precision in ("int8", "uint8"):
        ranges = _require(ranges, precision)
        ranges.check(matrix.shape[1])
        levels = np.clip(np.rint((matrix - ranges.minimum) / ranges.step), 0, _LEVELS)  # (n, dim)
        return (levels - 128).astype(np.int8) if precision == "int8" else levels.astype(np.uint8)
    raise ValueError(
        f"unknown quantization precision {precision!r}; choose from {', '.join(QUANTIZATION_PRECISIONS)}"
    )


def _require(ranges: QuantizationRanges | None, precision: str) -> QuantizationRanges:
    if ranges is None:
        raise ValueError(
            f"{precision} needs per-dimension ranges from calibration vectors: pass "
            "ranges=QuantizationRanges.from_vectors(sample_of_the_corpus); ranges from the batch alone "
            "would give one sentence different codes in different batches"
        )
    return ranges


def _as_matrix(vectors: np.ndarray, what: str) -> np.ndarray:
    matrix = np.asarray(vectors)
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.floating):
        raise ValueError(
            f"{what} must be a float matrix (n, dim), got {matrix.dtype} of shape {matrix.shape}"
        )
    return matrix.astype(np.float32, copy=False)
