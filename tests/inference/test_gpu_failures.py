"""Failures on the GPU path, simulated on the CPU: a CUDA-graph capture that fails must not hide an
error the forward pass raises without a graph too, and variable-length attention that fails must
neither hide an error of the padded path nor switch a pipeline to the slow path after it has run."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import pytest
import torch

from sbert import SentenceEncoder
from sbert.inference import precision as precision_module
from sbert.inference.cuda.graphs import GraphedForward
from sbert.inference.cuda.unpadded import UnpaddedBert, unpadded_batch


class _Stream:
    def __init__(self, *args: object) -> None: ...

    def wait_stream(self, other: object) -> None: ...


class _Graph:
    def replay(self) -> None: ...


def simulate_cuda_graphs(monkeypatch: pytest.MonkeyPatch, capture_fails: bool) -> None:
    """torch.cuda's stream and graph calls as no-ops on the CPU; a capture that raises if asked."""

    @contextlib.contextmanager
    def graph(*args: object, **kwargs: object) -> Iterator[None]:
        if capture_fails:
            raise RuntimeError("operation not permitted when stream is capturing")
        yield

    monkeypatch.setattr(torch.cuda, "Stream", _Stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: _Stream())
    monkeypatch.setattr(torch.cuda, "stream", lambda stream: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _Graph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    monkeypatch.setattr(precision_module, "_warned", set())


def _graphed(forward: object) -> GraphedForward:
    graphed = GraphedForward(forward, torch.device("cpu"))  # type: ignore[arg-type]
    graphed.enabled = True  # as on CUDA
    return graphed


IDS = torch.ones(1, 16, dtype=torch.long)


def test_an_error_of_the_forward_pass_is_raised_not_taken_for_a_capture_failure(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    simulate_cuda_graphs(monkeypatch, capture_fails=False)

    def broken(ids: torch.Tensor, mask: torch.Tensor, prompt: int) -> torch.Tensor:
        raise RuntimeError("expected scalar type Half but found Float")

    graphed = _graphed(broken)
    with (
        caplog.at_level(logging.WARNING, logger="sbert"),
        pytest.raises(RuntimeError, match="expected scalar type Half"),
    ):
        graphed(IDS, IDS, 0)
    assert not [r for r in caplog.records if "capture failed" in r.getMessage()]
    assert graphed.enabled and graphed.failure is None  # graphs stay on: capture was never the problem


def test_a_capture_failure_runs_without_graphs_and_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    simulate_cuda_graphs(monkeypatch, capture_fails=True)
    graphed = _graphed(lambda ids, mask, prompt: (ids * mask).float() * 2)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        out = graphed(IDS, IDS, 0)
    assert out.sum() == 32 and not graphed.enabled
    assert graphed.failure is not None and "not permitted when stream is capturing" in graphed.failure
    assert any("CUDA graph capture failed" in r.getMessage() for r in caplog.records)


def test_a_capture_that_works_is_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    simulate_cuda_graphs(monkeypatch, capture_fails=False)
    calls: list[int] = []
    graphed = _graphed(lambda ids, mask, prompt: calls.append(1) or (ids * mask).float())
    graphed(IDS, IDS, 0)
    graphed(IDS, IDS, 0)
    assert len(calls) == 3 and len(graphed.graphs) == 1  # two warm-ups and the capture; then replays


def _bert(encoder: SentenceEncoder) -> tuple[UnpaddedBert, object]:
    bert = UnpaddedBert(encoder.transformer.model, torch.float16)
    batch = unpadded_batch(encoder.token_ids(["a man plays the guitar", "rain"]).ids)
    return bert, batch


def test_variable_length_attention_that_cannot_run_gives_way_to_blocks_with_a_warning(
    tiny_encoder: SentenceEncoder, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(precision_module, "_warned", set())
    bert, batch = _bert(tiny_encoder)
    with torch.inference_mode():
        expected = bert(batch)  # padded blocks (no varlen on the CPU)

    def unsupported(*args: object) -> torch.Tensor:
        raise RuntimeError("FlashAttention only supports head dimension at most 256")

    bert.varlen = unsupported
    with caplog.at_level(logging.WARNING, logger="sbert"), torch.inference_mode():
        got = bert(batch)
    torch.testing.assert_close(got, expected)
    assert bert.varlen is None
    assert any("variable-length attention cannot run here" in r.getMessage() for r in caplog.records)


def test_an_error_the_blocks_raise_too_is_raised_and_keeps_variable_length_attention(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    bert, batch = _bert(tiny_encoder)

    def refuses(*args: object) -> torch.Tensor:
        raise RuntimeError("expected scalar type Half but found Float")

    bert.varlen = refuses
    monkeypatch.setattr(bert, "_blocks", refuses)  # the padded path fails the same way
    with pytest.raises(RuntimeError, match="expected scalar type Half"), torch.inference_mode():
        bert(batch)
    assert bert.varlen is refuses  # not switched off for good by an error that was not its own


def test_a_failure_after_variable_length_attention_has_run_is_raised(tiny_encoder: SentenceEncoder) -> None:
    bert, batch = _bert(tiny_encoder)
    blocks = bert._blocks
    calls: list[int] = []

    def works_once(
        query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: object
    ) -> torch.Tensor:
        calls.append(1)
        if len(calls) > 2:  # two layers: the second call of the next batch fails
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return torch.zeros_like(query)

    bert.varlen = works_once
    with torch.inference_mode():
        bert(batch)
        with pytest.raises(RuntimeError, match="illegal memory access"):
            bert(batch)
    assert bert.varlen is works_once and bert._blocks == blocks
