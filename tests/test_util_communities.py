"""``util.community_detection`` against sentence-transformers' as the oracle: the same communities
from float32 and float64 vectors, numpy or tensors, at ``threshold=1.0`` too, where a float32
duplicate's cosine (0.99999988) is below the threshold and ST leaves it out.

Members tied in score are ordered by position in sbert (ST: heap order, docs/guides/coming-from-st.md),
so a community is compared as its centre, then its members as a set."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from sentence_transformers import util as st_util

from sbert import util


def comparable(communities: list[list[int]]) -> list[tuple[int, list[int]]]:
    return [(community[0], sorted(community[1:])) for community in communities]


def assert_as_st(embeddings: Any, **arguments: Any) -> list[list[int]]:
    ours = util.community_detection(embeddings, **arguments)
    theirs = st_util.community_detection(embeddings, **arguments)
    assert comparable(ours) == comparable(theirs), arguments
    return ours


def near_duplicates(seed: int) -> np.ndarray:
    """Three float32 vectors, then copies of two of them (one scaled by 1 + 1e-7)."""
    base = np.random.default_rng(seed).standard_normal((3, 16)).astype(np.float32)
    return np.vstack([base, base[:1], base[:1] * np.float32(1.0000001), base[1:2]])


def test_threshold_one_groups_what_sentence_transformers_groups() -> None:
    differs_in_float64 = 0
    for seed in range(40):
        vectors = near_duplicates(seed)
        for given in (vectors, torch.from_numpy(vectors)):
            assert_as_st(given, threshold=1.0, min_community_size=2)
        # The case is real: computed in float64, the same float32 vectors give other groups.
        wide = st_util.community_detection(vectors.astype(np.float64), threshold=1.0, min_community_size=2)
        float32 = st_util.community_detection(vectors, threshold=1.0, min_community_size=2)
        differs_in_float64 += comparable(wide) != comparable(float32)
    assert differs_in_float64 > 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threshold", [0.5, 0.75, 0.9, 0.99])
def test_overlapping_groups_come_out_as_sentence_transformers_keeps_them(
    dtype: type, threshold: float
) -> None:
    """Clustered vectors whose candidate communities overlap (a centre taken by a larger one)."""
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((6, 12))
    vectors = np.vstack([centre + rng.normal(0, 0.35, (15, 12)) for centre in centres]).astype(dtype)
    for size in (2, 5, 12):
        for batch_size in (16, 1024):
            found = assert_as_st(vectors, threshold=threshold, min_community_size=size, batch_size=batch_size)
            assert all(len(c) >= size for c in found)
    assert_as_st(torch.from_numpy(vectors), threshold=threshold, min_community_size=3)
