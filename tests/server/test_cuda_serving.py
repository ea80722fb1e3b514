"""``sbert serve`` on CUDA, run on the CPU under CUDA's rules (tests/cuda_rules.py), in float16
(``auto`` on an H100), bfloat16 and float32.

The plan is made for a CUDA device (an H100, simulated as tests/inference/test_gpu_paths.py does);
everything else is the server's own code: ``build_service`` (token budget, warm-up), the app, the
batcher, ``encode()`` and the runner the plan picks. The batcher is stepped on the test's thread
(:meth:`Batcher.step`), the one the CUDA-rules mode watches, while a client thread sends real HTTP
requests to the app in-process. A spy on the pipeline's device half records which path each pass
took: ``graph`` (the bucketed shapes a CUDA graph replays; on the CPU they run without a graph),
``unpadded`` or ``padded``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from starlette.testclient import TestClient
from tests.conftest import GPU_BOUND, gpu_sentences
from tests.cuda_rules import CudaRules
from tests.inference.test_cuda_precision import simulate_gpu

from sbert import SentenceEncoder
from sbert.cli import main
from sbert.inference import runners as runners_module
from sbert.inference.cuda.pipeline import CudaPipeline
from sbert.inference.plan import make_plan
from sbert.server import run as run_module
from sbert.server.app import create_app
from sbert.server.batcher import BatchStats, TokenBudget
from sbert.server.run import build_service
from sbert.server.service import Service
from sbert.server.settings import BatchSettings, ServeOptions

# precision asked for → the dtype the pipeline computes in on an H100 ("auto": float16, tensor cores)
PRECISIONS = {"auto": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def _sentences(count: int, seed: int = 0) -> list[str]:
    return gpu_sentences(count, seed, longest=13)


@pytest.fixture()
def cuda_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans made for cuda:0 on an H100, and the runner select() builds for them (the GPU pipeline)."""
    simulate_gpu(monkeypatch, "NVIDIA H100 80GB HBM3", (9, 0))
    cuda = torch.device("cuda:0")
    monkeypatch.setattr(
        "sbert.inference.planning.make_plan", lambda request, cpu, device: make_plan(request, cpu, cuda)
    )
    monkeypatch.setattr(runners_module, "on_cuda", lambda module: True)


@pytest.fixture()
def passes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Each forward pass of the GPU pipeline: its path and its real tokens."""
    seen: list[tuple[str, int]] = []
    original = CudaPipeline._forward

    def forward(self: CudaPipeline, batch: Any, prompt_length: int) -> torch.Tensor:
        kind = batch.kind
        mask = batch.inputs[1] if kind == "graph" else None
        tokens = int(mask.sum()) - (mask.shape[0] - len(batch.order)) if mask is not None else -1
        if kind == "unpadded":
            tokens = int(batch.inputs.input_ids.numel())
        seen.append((kind, tokens))
        return original(self, batch, prompt_length)

    monkeypatch.setattr(CudaPipeline, "_forward", forward)
    return seen


def _served(model_dir: Path, precision: str, **batching: Any) -> Service:
    model = SentenceEncoder.from_pretrained(model_dir, device="cpu", precision=precision)
    service = build_service(model, ServeOptions(batching=BatchSettings(**batching)))
    # graphs=None resolves to graphs on CUDA and to none on the CPU: asked for, the CPU runs the
    # same bucketed shapes without capturing them.
    options = model.runners.pipeline_options
    assert options is not None
    model.runners.pipeline_options = replace(options, graphs=True)
    return service


def _request(service: Service, client: TestClient, body: dict[str, Any]) -> Any:
    """POST /v1/embeddings from a client thread; the batcher's one step runs here, on this thread."""
    answer: dict[str, Any] = {}
    sender = threading.Thread(target=lambda: answer.update(r=client.post("/v1/embeddings", json=body)))
    sender.start()
    deadline = time.monotonic() + 30
    while service.batcher.queued_items == 0:  # bounded: the request is queued, or it failed
        assert sender.is_alive() and time.monotonic() < deadline, answer
        time.sleep(0.001)
    assert service.batcher.step()
    sender.join(30)
    response = answer["r"]
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture()
def reference(tiny_model_dir: Path) -> Iterator[SentenceEncoder]:
    yield SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32", backend="torch")


def _worst_distance(got: np.ndarray, expected: np.ndarray) -> float:
    a, b = torch.as_tensor(got).float(), torch.as_tensor(expected).float()
    return float((1 - F.cosine_similarity(a, b, dim=-1)).max())


@pytest.mark.usefixtures("cuda_plan")
@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_one_served_query_reaches_the_gpu_pipelines_graph_path_with_one_sync(
    tiny_model_dir: Path,
    reference: SentenceEncoder,
    passes: list[tuple[str, int]],
    cuda_rules: CudaRules,
    precision: str,
) -> None:
    service = _served(tiny_model_dir, precision)
    model = service.model
    assert isinstance(model.runners.select(model.plan, model.name), CudaPipeline)
    assert service.batcher.token_budget == TokenBudget(16384)  # TEI's default, real tokens (unpadded)
    cuda_rules.on_device(model)  # the weights live on the device
    client = TestClient(create_app(service))
    _request(service, client, {"input": "warm up"})  # the pipeline built again with graphs on
    cuda_rules.reset()
    passes.clear()
    query = "A man plays the guitar in the park."
    body = _request(service, client, {"input": query, "encoding_format": "float"})
    assert passes == [("graph", len(model.token_ids([query]).ids[0]))]
    # The one wait for the device is the answer's copy to the host.
    assert [sync.what for sync in cuda_rules.syncs] == ["a copy to the host"], cuda_rules.syncs
    with cuda_rules.paused():
        expected = reference.encode([query])
    got = np.array([body["data"][0]["embedding"]], dtype=np.float32)
    assert _worst_distance(got, expected) <= GPU_BOUND[PRECISIONS[precision]]
    assert cuda_rules.checked > 0  # the dtype rules ran over the forward pass

    # Token ids go through the same runner (Planning.encode_token_ids): one graph pass, one sync.
    cuda_rules.reset()
    passes.clear()
    ids = model.tokenizer(query, add_special_tokens=False)["input_ids"]
    body = _request(service, client, {"input": ids, "encoding_format": "float"})
    assert [kind for kind, _ in passes] == ["graph"]
    assert [sync.what for sync in cuda_rules.syncs] == ["a copy to the host"], cuda_rules.syncs
    got_ids = np.array([body["data"][0]["embedding"]], dtype=np.float32)
    assert _worst_distance(got_ids, got) <= GPU_BOUND[PRECISIONS[precision]]


@pytest.mark.usefixtures("cuda_plan")
@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_concurrent_requests_merge_into_one_unpadded_pass_with_one_sync(
    tiny_model_dir: Path,
    reference: SentenceEncoder,
    passes: list[tuple[str, int]],
    cuda_rules: CudaRules,
    precision: str,
) -> None:
    service = _served(tiny_model_dir, precision)
    batcher = service.batcher
    stats: list[BatchStats] = []
    batcher.on_batch = stats.append
    cuda_rules.on_device(service.model)
    batcher.embed(["warm up"] * 16)
    assert batcher.step()
    cuda_rules.reset()
    passes.clear()
    texts = _sentences(64)  # 64 clients of one sentence each, queued while a batch ran
    futures = [batcher.embed([text]) for text in texts]
    assert batcher.step()
    assert [kind for kind, _ in passes] == ["unpadded"]  # one pass, no padding: not the PyTorch loop
    assert [(s.requests, s.sentences) for s in stats[1:]] == [(64, 64)]
    assert [sync.what for sync in cuda_rules.syncs] == ["a copy to the host"], cuda_rules.syncs
    got = np.concatenate([future.result(0).vectors for future in futures])
    with cuda_rules.paused():
        expected = reference.encode(texts)
    assert _worst_distance(got, expected) <= GPU_BOUND[PRECISIONS[precision]]


@pytest.mark.usefixtures("cuda_plan")
@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_batches_follow_teis_max_batch_tokens_in_arrival_order(
    tiny_model_dir: Path, passes: list[tuple[str, int]], cuda_rules: CudaRules, precision: str
) -> None:
    budget = 48
    service = _served(tiny_model_dir, precision, max_batch_tokens=budget)
    batcher, model = service.batcher, service.model
    assert batcher.token_budget == TokenBudget(budget) and batcher.settings.max_batch_tokens == budget
    stats: list[BatchStats] = []
    batcher.on_batch = stats.append
    cuda_rules.on_device(model)
    requests = [_sentences(int(n), seed) for seed, n in enumerate([1, 3, 2, 1, 4, 1, 2, 1, 1, 3])]
    requests.append(_sentences(8, 99) * 2)  # one request over the budget alone
    counts = [[len(row) for row in model.token_ids(texts).ids] for texts in requests]
    batcher.embed(["warm up"])
    assert batcher.step()
    cuda_rules.reset()
    passes.clear()
    stats.clear()
    futures = [batcher.embed(texts) for texts in requests]
    assert batcher.step()  # one take: every request; cut into TEI's batches
    # TEI's queue: requests in arrival order until the next would pass the budget.
    expected_runs = TokenBudget(budget).groups(counts)
    assert len(expected_runs) > 2
    assert [(s.requests, s.tokens) for s in stats] == [
        (len(run), sum(sum(counts[i]) for i in run)) for run in expected_runs
    ]
    assert all(s.tokens <= budget or s.requests == 1 for s in stats) and stats[-1].tokens > budget
    # Every pass of the pipeline holds at most the budget's real tokens, the big request's included.
    assert all(0 < tokens <= budget for _, tokens in passes), passes
    # One wait for the device per batch answered, none per pass.
    assert len(cuda_rules.syncs) == len(expected_runs) < len(passes), cuda_rules.syncs
    assert all(future.result(0).vectors.shape[0] == len(texts) for future, texts in zip(futures, requests))


@pytest.mark.usefixtures("cuda_plan")
def test_health_and_the_start_up_line_say_the_device_and_the_plan(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(
        run_module, "serve", lambda models, options, *loaders: served.append((models, options)) or 0
    )
    assert main(["serve", "--model", str(tiny_model_dir), "--precision", "auto"]) == 0
    line = capsys.readouterr().err
    assert (
        "(cuda:0, float16, torch on the GPU pipeline, batches of up to 16384 real tokens, "
        "CUDA graphs for small batches) on http://127.0.0.1:8000"
    ) in line, line
    service = _served(tiny_model_dir, "auto")
    health = TestClient(create_app(service)).get("/health").json()
    assert health["serving"] == {
        "device": "cuda:0",
        "precision": "float16",
        "backend": "torch",
        "runner": "cuda-pipeline",
        "max_batch_tokens": 16384,
        "batch_tokens": "real",
        "cuda_graphs": True,
    }
    assert TestClient(create_app(service)).get("/info").json()["max_batch_tokens"] == 16384


def test_device_cuda_without_a_gpu_stops_before_the_model_loads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-model")  # were it loaded first, the error would name this
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["serve", "--model", missing, "--device", "cuda"]) == 1
    error = capsys.readouterr().err
    assert "sbert serve: error: --device 'cuda': no CUDA GPU is available here" in error, error
    assert "use --device cpu" in error and "no-such-model" not in error


def test_device_cuda_7_with_two_gpus_names_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: f"NVIDIA H100 #{index}")
    assert main(["serve", "--model", str(tmp_path / "no-such-model"), "--device", "cuda:7"]) == 1
    error = capsys.readouterr().err
    assert (
        "--device 'cuda:7': this machine has 2 CUDA GPU(s): cuda:0 (NVIDIA H100 #0), cuda:1 (NVIDIA H100 #1)"
    ) in error, error
    assert main(["serve", "--model", str(tmp_path / "x"), "--device", "gpu"]) == 1
    assert "--device 'gpu': not a device torch knows" in capsys.readouterr().err
