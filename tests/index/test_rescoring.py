"""Rescoring vectors read from disk: the same rows and scores as in memory, and no page kept mapped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sbert.index.rescoring import RescoreVectors, rescore
from sbert.quantization import QuantizationRanges


def _unit(rows: int, dim: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _saved(tmp_path: Path, vectors: np.ndarray, precision: str) -> tuple[RescoreVectors, RescoreVectors]:
    ranges = QuantizationRanges.from_vectors(vectors) if precision == "int8" else None
    held = RescoreVectors.in_memory(vectors, precision, ranges)
    np.save(tmp_path / "rescore.npy", held.codes, allow_pickle=False)
    return held, RescoreVectors.open(tmp_path / "rescore.npy", precision, ranges, *vectors.shape)


@pytest.mark.parametrize("precision", ["float32", "float16", "int8"])
def test_rows_and_scores_from_disk_equal_in_memory(tmp_path: Path, precision: str) -> None:
    vectors = _unit(500, 24)
    held, on_disk = _saved(tmp_path, vectors, precision)
    positions = np.array([499, 3, 250, 0, 17])
    np.testing.assert_array_equal(on_disk.rows(positions), held.rows(positions))
    query = _unit(1, 24, seed=1)[0]
    ascending = np.sort(positions)
    # int8 scores skip dequantizing: the same numbers as query · dequantize(code), up to rounding.
    np.testing.assert_allclose(on_disk.scores(ascending, query), held.rows(ascending) @ query, atol=1e-5)
    ids, scores = rescore(query, np.array([-1, *positions, 3]), on_disk, top_k=3)  # -1 padding, a repeat
    assert len(ids) == 3 and len(set(ids)) == 3 and -1 not in ids
    np.testing.assert_allclose(scores, held.rows(np.array(ids)) @ query, atol=1e-5)


def test_rows_read_from_disk_are_not_mapped(tmp_path: Path) -> None:
    """Reads go through pread: the process maps no page of the rescoring file, however many it reads."""
    vectors = _unit(20_000, 64)
    _, on_disk = _saved(tmp_path, vectors, "float32")
    on_disk.rows(np.arange(0, 20_000, 7))
    mapped_kib = 0
    lines = Path("/proc/self/smaps").read_text().splitlines() if Path("/proc/self/smaps").exists() else []
    inside = False
    for line in lines:
        if line and line.split()[0][0] in "0123456789abcdef" and "-" in line.split()[0]:
            inside = line.endswith(str(tmp_path / "rescore.npy"))
        elif inside and line.startswith("Rss:"):
            mapped_kib += int(line.split()[1])
    assert mapped_kib == 0
