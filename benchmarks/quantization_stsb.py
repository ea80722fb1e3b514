"""STSb test Spearman (×100) of the bundled model's vectors in float32, float16, int8, uint8 and binary.

The vectors are encoded once in float32. int8/uint8 ranges are calibrated on the STSb *train*
sentences (never on the test batch) and the scores are cosines of the dequantized vectors; binary
scores are 1 − 2·Hamming/dim (the share of agreeing sign bits, rescaled). The target: int8 within
0.3 points of float32.

    flock /tmp/sbert-heavy.lock python benchmarks/quantization_stsb.py
"""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone

import numpy as np
from scipy.stats import spearmanr

from sbert import SentenceEncoder
from sbert.data.readers import read_stsb
from sbert.quantization import QuantizationRanges, dequantize_embeddings, quantize_codes


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def main() -> None:
    model = SentenceEncoder.from_pretrained(precision="float32")
    test, train = read_stsb("test"), read_stsb("train")
    first = model.encode([p.sentence1 for p in test], batch_size=64)
    second = model.encode([p.sentence2 for p in test], batch_size=64)
    calibration = model.encode(sorted({p.sentence1 for p in train})[:3000], batch_size=64)
    ranges = QuantizationRanges.from_vectors(calibration)
    gold = [p.score for p in test]
    results = {}
    for precision in ("float32", "float16", "int8", "uint8", "binary"):
        if precision == "binary":
            bits = [np.unpackbits(quantize_codes(v, "ubinary"), axis=1) for v in (first, second)]
            scores = 1.0 - 2.0 * (bits[0] != bits[1]).mean(1)
        else:
            a, b = (
                dequantize_embeddings(quantize_codes(v, precision, ranges), precision, ranges)
                for v in (first, second)
            )
            scores = cosine_rows(a, b)
        results[precision] = round(100 * float(spearmanr(scores, gold).statistic), 2)
    record = {
        "stsb_test_spearman": results,
        "int8_minus_float32": round(results["int8"] - results["float32"], 2),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": platform.machine(),
        "command": "python benchmarks/quantization_stsb.py",
    }
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
