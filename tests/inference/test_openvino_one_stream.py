"""A call of fewer passes than OpenVINO streams (a query) runs on one stream over every thread,
from the second such call, with the throughput graph's vectors."""

from pathlib import Path

import pytest
import torch

from sbert import SentenceEncoder
from sbert.base.batching import length_sorted_batches
from sbert.inference.openvino.engine import OpenVinoEngine
from sbert.inference.probe import UnfaithfulGraph
from sbert.inference.runner import RunOptions

pytest.importorskip("openvino")

QUERY = ["a man plays the guitar in the rain"]
MANY = [f"sentence number {i} is about {w}" for i, w in enumerate(["dogs", "cats", "rain", "sun"] * 4)]


def _engine(encoder: SentenceEncoder, threads: int = 2) -> OpenVinoEngine:
    return OpenVinoEngine(
        encoder.transformer,
        encoder.pooling,
        "float32",
        threads=threads,
        reference=encoder.planning.runners.reference_pooled,
    )


def _embed(
    engine: OpenVinoEngine, encoder: SentenceEncoder, texts: list[str], batch: int = 32
) -> torch.Tensor:
    tokenized = encoder.token_ids(texts)
    return engine.embed(tokenized.ids, length_sorted_batches(tokenized.lengths, batch))


def test_the_second_query_runs_on_one_stream_with_the_same_vectors(tiny_encoder: SentenceEncoder) -> None:
    engine = _engine(tiny_encoder)
    assert len(engine.requests) == 2  # throughput: one stream a thread
    first = _embed(engine, tiny_encoder, QUERY)
    assert engine.one_stream.requests is None  # a one-off call compiles nothing more
    second = _embed(engine, tiny_encoder, QUERY)
    one = engine.one_stream.requests
    assert one is not None and len(one) == 1
    assert one[0].get_compiled_model().get_property("NUM_STREAMS") == 1
    torch.testing.assert_close(second, first, atol=1e-6, rtol=0)
    many = _embed(engine, tiny_encoder, MANY, batch=4)  # four passes: both streams, as before
    torch.testing.assert_close(many[:1], _embed(engine, tiny_encoder, MANY[:1]), atol=1e-6, rtol=0)


def test_one_thread_or_no_cached_graph_keeps_the_throughput_graph(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    single = _engine(tiny_encoder, threads=1)
    for _ in range(3):
        _embed(single, tiny_encoder, QUERY)
    assert single.one_stream.requests is None
    monkeypatch.setenv("SBERT_CACHE_DIR", "off")  # nothing to read the graph back from
    uncached = _engine(tiny_encoder)
    for _ in range(3):
        _embed(uncached, tiny_encoder, QUERY)
    assert uncached.one_stream.requests is None and uncached.one_stream.failed


def test_an_unfaithful_one_stream_compile_is_never_used(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(tiny_encoder)

    def refuse(requests: list[object]) -> None:
        raise UnfaithfulGraph("probe vectors differ")

    engine.one_stream.prove = refuse
    for _ in range(3):
        _embed(engine, tiny_encoder, QUERY)
    assert engine.one_stream.requests is None and engine.one_stream.failed


def test_encode_of_queries_uses_it(tiny_model_dir: Path) -> None:
    encoder = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", backend="openvino")
    vectors = [encoder.encode(QUERY, convert_to_tensor=True) for _ in range(3)]
    torch.testing.assert_close(vectors[2], vectors[0], atol=1e-6, rtol=0)
    engine = encoder.runners.openvino[encoder.precision]
    if engine.threads >= 2:
        assert engine.one_stream.requests is not None


def test_a_served_query_takes_the_padded_graph_on_one_stream(tiny_model_dir: Path) -> None:
    encoder = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", backend="openvino")
    ids = encoder.token_ids(QUERY + MANY[:3]).ids
    packed = RunOptions(pack=True, max_tokens=8192)  # what sbert serve's batcher asks on OpenVINO
    together = encoder.encode_token_ids(ids, packed)  # packed rows
    alone = [encoder.encode_token_ids(ids[:1], packed) for _ in range(2)]
    torch.testing.assert_close(alone[1], together[:1], atol=1e-6, rtol=0)
    engine = encoder.runners.openvino[encoder.precision]
    if engine.threads >= 2:
        assert engine.one_stream.requests is not None
