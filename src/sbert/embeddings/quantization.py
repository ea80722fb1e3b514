"""Embedding quantization: smaller vectors for large corpora.

- ``float16``: half the bytes, cosines within about 1e-3.
- ``int8`` / ``uint8``: one byte a dimension. Each dimension's range comes from *calibration
  vectors* (a sample of the corpus), is stored beside the codes and reused for every later batch and
  query: ranges taken from the batch being quantized would give the same sentence different codes in
  different batches.
- ``binary`` / ``ubinary``: one bit a dimension (``x > 0``), packed eight to a byte (``int8`` codes
  offset by -128, as sentence-transformers writes them, or ``uint8``). Compared by Hamming distance.

Two functions make codes. :func:`quantize_codes` is sbert's: int8/uint8 need stored
:class:`QuantizationRanges` and round to the nearest step (what stores and indexes keep).
:func:`quantize_embeddings` is sentence-transformers' function of that name, same arguments, same
codes (``ranges`` a (2, dim) array; without ranges or calibration vectors, the ranges of the
vectors given, so a sentence's codes depend on its batch).

Example:
    >>> import numpy as np
    >>> vectors = np.random.default_rng(0).normal(size=(1000, 8)).astype("float32")
    >>> ranges = QuantizationRanges.from_vectors(vectors)
    >>> codes = quantize_codes(vectors[:2], "int8", ranges)
    >>> codes.dtype, codes.shape
    (dtype('int8'), (2, 8))
    >>> quantize_codes(vectors[:2], "ubinary").shape  # 8 dimensions, one byte
    (2, 1)
    >>> quantize_embeddings(vectors[:2], "int8", calibration_embeddings=vectors).dtype
    dtype('int8')
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import Tensor

logger = logging.getLogger("sbert")

QUANTIZATION_PRECISIONS = ("float32", "float16", "int8", "uint8", "binary", "ubinary")
_LEVELS = 255  # steps between a dimension's minimum and maximum in one byte


@dataclass(frozen=True)
class QuantizationRanges:
    """Per-dimension minimum and maximum that map floats onto one-byte codes.

    Attributes:
        minimum: ``(dim,)`` float32, the lowest calibration value of each dimension.
        maximum: ``(dim,)`` float32, the highest.
        model_fingerprint: The fingerprint of the model that made the calibration vectors
            (:func:`sbert.embeddings.identity.model_identity`), checked when the ranges are reused.
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


def quantize_codes(
    vectors: np.ndarray, precision: str, ranges: QuantizationRanges | None = None
) -> np.ndarray:
    """sbert's codes for ``vectors`` ``(n, dim)`` (or one ``(dim,)`` vector) in ``precision``.

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


def quantize_embeddings(
    embeddings: Tensor | np.ndarray,
    precision: str,
    ranges: np.ndarray | None = None,
    calibration_embeddings: np.ndarray | None = None,
) -> np.ndarray:
    """sentence-transformers' ``quantize_embeddings``: the same arguments, the same codes.

    Args:
        embeddings: Float vectors (n, dim) or one (dim,), numpy or torch.
        precision: ``float32``, ``int8``, ``uint8``, ``binary`` or ``ubinary``.
        ranges: int8/uint8: a (2, dim) array of each dimension's minimum and maximum.
        calibration_embeddings: int8/uint8 without ``ranges``: vectors whose minimum and maximum
            are the ranges (default: ``embeddings`` themselves, which ties a sentence's codes to
            its batch; :func:`quantize_codes` with stored ranges does not).

    Returns:
        int8/uint8: (n, dim) codes ``floor((x - min) / step)``, minus 128 for int8; binary/ubinary:
        (n, ceil(dim / 8)) packed bits; float32: the vectors.

    Raises:
        ValueError: an unknown precision, or int8/uint8 ranges from one vector alone.
        TypeError: ``ranges`` is a :class:`QuantizationRanges` (use :func:`quantize_codes`).

    Examples:
        >>> quantize_embeddings(np.array([[0.0, 1.0], [1.0, 0.5], [0.5, 0.0]]), "uint8").tolist()  # floor
        [[0, 254], [254, 127], [127, 0]]
    """
    if isinstance(ranges, QuantizationRanges):
        raise TypeError("ranges is a QuantizationRanges: use quantize_codes(vectors, precision, ranges)")
    matrix = np.asarray(embeddings.detach().cpu() if isinstance(embeddings, Tensor) else embeddings)
    if matrix.dtype in (np.uint8, np.int8):
        raise ValueError(f"embeddings to quantize must be float, not {matrix.dtype}")
    if precision == "float32":
        return matrix.astype(np.float32)
    if precision in ("binary", "ubinary"):
        return _quantize(matrix, precision, None)
    if precision not in ("int8", "uint8"):
        raise ValueError(
            f"unknown quantization precision {precision!r}; choose from float32, int8, uint8, binary, ubinary"
        )
    if ranges is None:
        ranges = _st_ranges(matrix, precision, calibration_embeddings)
    ranges = np.asarray(ranges, dtype=np.float32)
    starts = ranges[0, :]
    steps = (ranges[1, :] - starts) / _LEVELS
    steps = np.where(steps == 0, 1, steps)
    levels = np.clip(np.floor((matrix - starts) / steps), 0, _LEVELS)
    return (levels - 128).astype(np.int8) if precision == "int8" else levels.astype(np.uint8)


def _st_ranges(matrix: np.ndarray, precision: str, calibration_embeddings: np.ndarray | None) -> np.ndarray:
    """(2, dim) minimum and maximum of the calibration vectors, else of ``matrix`` (as ST does)."""
    if calibration_embeddings is None:
        if matrix.ndim == 1 or matrix.shape[0] == 1:
            raise ValueError(
                f"cannot compute {precision} quantization ranges from a single embedding: pass ranges= "
                "or calibration_embeddings= from a representative set of embeddings"
            )
        if matrix.shape[0] < 100:
            logger.warning(
                "%s quantization ranges from only %d embeddings; ranges= or calibration_embeddings= "
                "from more embeddings are more stable",
                precision,
                matrix.shape[0],
            )
        calibration_embeddings = matrix
    return np.vstack((np.min(calibration_embeddings, axis=0), np.max(calibration_embeddings, axis=0)))


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
