"""``sbert.quantization``: the public path of :mod:`sbert.embeddings.quantization` (embedding quantization)."""

from sbert.embeddings.quantization import (
    QUANTIZATION_PRECISIONS,
    QuantizationRanges,
    dequantize_embeddings,
    quantize_codes,
    quantize_embeddings,
)

__all__ = [
    "QUANTIZATION_PRECISIONS",
    "QuantizationRanges",
    "dequantize_embeddings",
    "quantize_codes",
    "quantize_embeddings",
]
