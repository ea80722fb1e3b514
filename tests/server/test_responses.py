"""JSON answers written from arrays: every float32 reads back bit for bit, as base64 gives it."""

from __future__ import annotations

import base64
import json

import numpy as np

from sbert.server.responses import JSONResponse, embedding_values, scores_array


def awkward_float32s() -> np.ndarray:
    """Random unit vectors, and the float32 values a shortest-text writer could get wrong."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((64, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    info = np.finfo(np.float32)
    edges = [0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, info.tiny, info.smallest_subnormal, info.max, -info.max]
    edges += [info.eps, 1 + info.eps, 16777217.0, 1e-7, 3.4e38, 123456.789]
    extra = np.array(edges + [0.0] * (384 - len(edges)), dtype=np.float32)
    return np.vstack([vectors, extra, rng.uniform(-1e30, 1e30, 384).astype(np.float32)])


def test_float_text_reads_back_as_the_same_float32_bits() -> None:
    vectors = awkward_float32s()
    parsed = json.loads(JSONResponse({"data": embedding_values(vectors)}).body)["data"]
    np.testing.assert_array_equal(np.array(parsed, dtype=np.float32).view(np.uint32), vectors.view(np.uint32))


def test_float_text_is_the_same_numbers_as_the_float_loop_wrote() -> None:
    # Before: json.dumps(vectors.tolist()), the float64 value of each float32 (17 digits).
    vectors = awkward_float32s()
    before = np.array(json.loads(json.dumps(vectors.tolist())), dtype=np.float32)
    now = np.array(json.loads(JSONResponse(embedding_values(vectors)).body), dtype=np.float32)
    np.testing.assert_array_equal(now.view(np.uint32), before.view(np.uint32))
    assert len(JSONResponse(embedding_values(vectors)).body) < 0.7 * len(json.dumps(vectors.tolist()))


def test_base64_is_little_endian_float32_and_agrees_with_float() -> None:
    vectors = awkward_float32s()
    encoded = embedding_values(vectors, "base64")
    decoded = np.stack([np.frombuffer(base64.b64decode(row), dtype="<f4") for row in encoded])
    np.testing.assert_array_equal(decoded.view(np.uint32), vectors.view(np.uint32))


def test_column_slices_and_float64_scores_are_written_as_float32() -> None:
    vectors = awkward_float32s()[:4, :8]  # not C-contiguous: what `dimensions` cuts
    parsed = json.loads(JSONResponse(embedding_values(vectors)).body)
    np.testing.assert_array_equal(np.array(parsed, dtype=np.float32), vectors)
    scores = np.array([0.1, 0.2, 1 / 3])  # float64 in
    assert json.loads(JSONResponse(scores_array(scores)).body) == [0.1, 0.2, 0.33333334]
    body = JSONResponse({"score": np.float32(0.1), "index": 2}).body
    assert body == b'{"score":0.1,"index":2}'
