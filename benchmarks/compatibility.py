"""The compatibility matrix behind the README's table: each architecture of
``tests/test_compatibility.py`` (tiny random models saved by sentence-transformers) × backend ×
precision: what sbert runs, and how far its vectors are from sentence-transformers' float32 ones.

    python benchmarks/compatibility.py

float32 is compared by the largest absolute difference; bf16 and int8 by the largest cosine distance
of a row (their graphs are checked by the probe before use, see sbert/inference/probe.py).
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.conftest import build_tiny_bert
from tests.test_compatibility import ARCHITECTURES, DECODERS, SENTENCES, build, st_model

from encode_speed import cpu_name
from sbert import SentenceEncoder

CELLS = [
    ("torch", "float32"),
    ("torch", "bfloat16"),
    ("openvino", "float32"),
    ("openvino", "bfloat16"),
    ("openvino", "int8"),
]


def cell(model_dir: Path, expected: np.ndarray, backend: str, precision: str) -> str:
    try:
        model = SentenceEncoder.from_pretrained(model_dir, device="cpu", precision=precision, backend=backend)
        got = model.encode(SENTENCES * 8)[: len(SENTENCES)]
    except Exception as error:  # an explicit backend that refuses: the reason is the cell
        return f"refused: {str(error).split(': ', 1)[-1]}"  # the reason, without the model's path
    ran = f"{model.plan.backend}/{model.plan.precision}"
    if precision == "float32":
        return f"{ran} {np.abs(got - expected).max():.0e}"
    cosine = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
    return f"{ran} {(1 - cosine).max():.0e}"


def main() -> None:
    logging.disable(logging.WARNING)
    root = Path(tempfile.mkdtemp())
    tiny = build_tiny_bert(root / "tiny")
    print(f"CPU: {cpu_name()}")
    print("| architecture | " + " | ".join(f"{b} {p}" for b, p in CELLS) + " |")
    print("|---" * (len(CELLS) + 1) + "|")
    for name in ARCHITECTURES:
        theirs = st_model(build(name, tiny, root / name), "lasttoken" if name in DECODERS else "mean")
        theirs.save(str(root / f"{name}-st"))
        expected = theirs.encode(SENTENCES)
        cells = [cell(root / f"{name}-st", expected, backend, precision) for backend, precision in CELLS]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
