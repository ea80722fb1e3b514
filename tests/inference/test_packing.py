"""Sequence packing: the plan covers every sentence once, packed token vectors equal a sentence's own,
pooling a segment equals pooling it padded, and ``encode(pack=True)`` equals ``encode()``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from tests.conftest import needs_native_int8

from sbert import SentenceEncoder
from sbert.inference.packing import (
    MAX_PASS_TOKENS,
    PackedTransformer,
    packable,
    packed_passes,
    pass_feeds,
)
from sbert.modules import Dense, Normalize, Pooling

SENTENCES = [
    "a man plays the guitar",
    "the dog runs in the park",
    "rain",
    "a small red car and a big blue car",
    "the woman cooks food and the child eats",
    "no",
    "a cat is playing with a bug in the sun and the rain",
]


@pytest.mark.parametrize("streams", [1, 2, 3])
def test_passes_hold_every_sentence_once_in_balanced_rows(streams: int) -> None:
    lengths = list(np.random.default_rng(streams).integers(3, 60, size=50))
    passes = packed_passes(lengths, streams, row_tokens=128)
    rows = [row for rows in passes for row in rows]
    assert sorted(i for row in rows for i in row) == list(range(50))
    assert len(rows) % streams == 0 and len(rows) >= sum(lengths) / 128
    loads = [sum(lengths[i] for i in row) for row in rows]
    assert max(loads) - min(loads) <= max(lengths)  # longest first to the emptiest row


def test_passes_respect_the_token_cap_and_never_exceed_the_sentences() -> None:
    lengths = [20] * 40  # 800 tokens: 8 rows of 100 over 2 streams, 4 rows a pass unless capped
    assert [len(rows) for rows in packed_passes(lengths, 2, row_tokens=100)] == [4, 4]
    assert [len(rows) for rows in packed_passes(lengths, 2, row_tokens=100, max_pass_tokens=250)] == [2] * 4
    assert packed_passes([5], streams=4) == [[[0]]]  # one sentence: one row, not four
    corpus = packed_passes([20] * 100_000, streams=2)  # a corpus: passes stay near MAX_PASS_TOKENS
    assert max(len(rows) * 20 * len(rows[0]) for rows in corpus) <= MAX_PASS_TOKENS  # rows × longest
    assert packed_passes([], streams=2) == []


@pytest.mark.parametrize("mode", ["mean", "cls", "max"])
def test_packed_rows_pool_to_each_sentence_alone(tiny_encoder: SentenceEncoder, mode: str) -> None:
    bert = tiny_encoder.transformer.model.eval()
    assert packable(bert, "float32") and not packable(bert, "int8")
    pooling = Pooling(bert.config.hidden_size, mode)
    ids = tiny_encoder.token_ids(SENTENCES).ids
    rows = [[0, 2, 5], [3, 1], [4, 6]]  # rows of unequal length: the short ones end in padding
    feeds = {name: torch.from_numpy(value) for name, value in pass_feeds(ids, rows).items()}
    with torch.no_grad():
        packed = PackedTransformer(bert, pooling)(**feeds)  # (sentences, hidden), in row order
        alone = [
            pooling(bert(input_ids=torch.tensor([ids[i]])).last_hidden_state, torch.ones(1, len(ids[i])))[0]
            for row in rows
            for i in row
        ]
    torch.testing.assert_close(packed, torch.stack(alone), atol=1e-5, rtol=0)


def test_relative_positions_are_not_packable(tiny_encoder: SentenceEncoder) -> None:
    bert = tiny_encoder.transformer.model
    bert.config.position_embedding_type = "relative_key"
    try:
        assert not packable(bert, "float32")
    finally:
        bert.config.position_embedding_type = "absolute"


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_encode_packed_equals_encode_with_layers_after_pooling(tiny_model_dir: Path, pooling: str) -> None:
    pytest.importorskip("openvino")
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", pooling=pooling, precision="float32"
    )
    model.requested_backend = "openvino"
    model.layers.extend([Dense(32, 8), Normalize()])
    texts = SENTENCES * 5  # several rows and passes
    padded = model.encode(texts)
    np.testing.assert_allclose(model.encode(texts, pack=True), padded, atol=1e-6, rtol=0)
    np.testing.assert_allclose(model.encode(texts, pack=True, max_tokens=40), padded, atol=1e-6, rtol=0)
    np.testing.assert_allclose(model.encode(texts[:1], pack=True), padded[:1], atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("backend", "precision"),
    [("torch", "float32"), pytest.param("openvino", "int8", marks=needs_native_int8)],
)
def test_where_it_cannot_pack_padded_batches_run(tiny_model_dir: Path, backend: str, precision: str) -> None:
    pytest.importorskip("openvino")
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision=precision, calibration_sentences=SENTENCES * 3
    )
    model.requested_backend = backend
    np.testing.assert_array_equal(model.encode(SENTENCES, pack=True), model.encode(SENTENCES))
    engine = model.runners.openvino.get(precision) if backend == "openvino" else None
    if engine is not None:  # int8 ranges were calibrated on padded batches
        assert not engine.can_pack
        with pytest.raises(ValueError, match="not packed"):
            engine.embed_packed(model.token_ids(SENTENCES).ids, [[[0]]])
