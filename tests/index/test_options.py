"""IndexOptions: the settings both index builders share, as one object or by keyword, alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sbert.index import IndexOptions, VectorIndex
from sbert.index.building import ArraySource, build_index


def _vectors() -> np.ndarray:
    return np.random.default_rng(3).normal(size=(300, 16)).astype("float32")


def test_both_builders_give_the_same_index_from_options_or_keywords(tmp_path: Path) -> None:
    vectors = _vectors()
    options = IndexOptions(kind="binary", rescore="float32", dimensions=8, params={"rescore_multiplier": 4})
    settings = {"kind": "binary", "rescore": "float32", "dimensions": 8, "params": {"rescore_multiplier": 4}}
    in_memory = [VectorIndex.build(vectors, options=options), VectorIndex.build(vectors, **settings)]
    on_disk = [
        build_index(ArraySource(vectors), tmp_path / "a", options=options),
        build_index(ArraySource(vectors), tmp_path / "b", **settings),
    ]
    for index in (*in_memory, *on_disk):
        assert (index.kind, index.dim, index.truncated_from, index.rescore_precision) == (
            "binary",
            8,
            16,
            "float32",
        )
    found = [index.search(index.query_vectors(vectors[:4]), top_k=5) for index in (*in_memory, *on_disk)]
    assert all(hits == found[0] for hits in found)


def test_a_keyword_wins_over_options_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    vectors = _vectors()
    options = IndexOptions(kind="hnsw", metric="dot")
    index = VectorIndex.build(vectors, options=options, kind="flat")
    assert (index.kind, index.metric) == ("flat", "dot")
    assert build_index(ArraySource(vectors), tmp_path / "i", options=options, kind="flat").kind == "flat"
    with pytest.raises(TypeError, match="unexpected keyword argument 'nlist'"):
        VectorIndex.build(vectors, nlist=8)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nlist'"):
        build_index(ArraySource(vectors), tmp_path / "j", nlist=8)
    with pytest.raises(TypeError):  # the settings are keywords: none is taken by position
        VectorIndex.build(vectors, None, None, "flat")  # type: ignore[misc]
