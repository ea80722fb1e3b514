"""Where a served model runs and how its batches are cut: checked before a model loads, said at
start-up and by ``/health``.

On a CPU the batcher merges requests into packed or length-sorted batches of at most
``--max-batch-tokens`` padded tokens (8192). On CUDA the GPU pipeline
(:mod:`sbert.inference.cuda.pipeline`) runs the batches: the batcher hands it requests in arrival
order up to ``--max-batch-tokens`` tokens, as text-embeddings-inference's queue does (16384 by
default, real tokens for a model it runs unpadded, sentences × longest for a padded one), and a
small batch (a lone query) replays a CUDA graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sbert.base.batching import BATCH_COST_TOKENS, MAX_BATCH_TOKENS

CPU_BATCH_TOKENS = 8192  # padded tokens of one forward pass on a CPU engine
# Forward passes' worth of sentences one take of the batcher merges on a CPU engine, which
# encode() then sorts by length and cuts into passes of --max-batch-size. A take of one pass's
# sentences (64 clients × 32 sentences: one request a take) is cut as it arrived: the STSb test
# sentences padded to 1.71× their real tokens, against 1.02× for encode() of all 2,048; takes of 16
# passes (512 sentences) 1.07× (benchmarks/serve_padding.py). It also pays a call's fixed costs
# (the runner's weights check, the plan) once for 16 passes.
CPU_TAKE_PASSES = 16


def check_device(device: str | None) -> None:
    """Refuse a ``--device`` this machine lacks before anything loads: ``cuda`` without a GPU,
    ``cuda:7`` with fewer GPUs, or a name torch does not know; each error names the flag and what
    there is. ``None`` (the default: CUDA if there is one) always passes.

    Examples:
        >>> check_device("cpu")
        >>> check_device("gpu")
        Traceback (most recent call last):
        ...
        ValueError: --device 'gpu': not a device torch knows (cpu, cuda, cuda:N, ...)
    """
    if device is None:
        return
    import torch

    try:
        wanted = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"--device {device!r}: not a device torch knows (cpu, cuda, cuda:N, ...)") from None
    if wanted.type != "cuda":
        return
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise ValueError(
            f"--device {device!r}: no CUDA GPU is available here "
            f"(torch {torch.__version__}, CUDA {torch.version.cuda or 'not built in'}); "
            "use --device cpu, or leave --device out"
        )
    if wanted.index is not None and wanted.index >= count:
        listing = ", ".join(f"cuda:{i} ({torch.cuda.get_device_name(i)})" for i in range(count))
        raise ValueError(f"--device {device!r}: this machine has {count} CUDA GPU(s): {listing}")


def on_gpu_pipeline(model: Any) -> bool:
    """Whether ``encode()`` runs this model on the GPU pipeline: its plan is PyTorch on a CUDA device."""
    plan = model.plan
    if getattr(model, "is_static", False):
        return False
    if getattr(model, "is_sparse", False) and not model.on_engine:
        return False  # a sparse model on the exact path (server.sparse_served): padded PyTorch passes
    return plan.device.startswith("cuda") and plan.backend == "torch"


def default_batch_tokens(model: Any) -> int:
    """``--max-batch-tokens`` left out: TEI's 16384 on the GPU pipeline, 8192 padded on a CPU."""
    return MAX_BATCH_TOKENS if on_gpu_pipeline(model) else CPU_BATCH_TOKENS


def pass_cost(model: Any) -> int | None:
    """What one forward pass costs beyond its tokens, for the batcher's cuts: the one measured on
    OpenVINO (:data:`~sbert.base.batching.BATCH_COST_TOKENS`) where the model runs there; elsewhere
    ``None``, batches of ``--max-batch-size`` as ``encode()`` cuts them: on PyTorch a pass's fixed
    cost is the framework's, not OpenVINO's, and cut at 24 tokens a 32-sentence request of a small
    model ran in several passes where one was cheaper (docs/benchmarks.md, the server's CPU proxy).

    Examples:
        >>> from types import SimpleNamespace
        >>> pass_cost(SimpleNamespace(backend="openvino")), pass_cost(SimpleNamespace(backend="torch"))
        (24, None)
    """
    return BATCH_COST_TOKENS if model.backend == "openvino" else None


def parallel_passes(model: Any) -> int:
    """Forward passes a merged batch is cut into at least: OpenVINO runs one batch per core side by
    side (one per torch thread); PyTorch spreads one batch over every core (1)."""
    import torch

    return max(1, torch.get_num_threads()) if model.backend == "openvino" else 1


def unpadded(model: Any) -> bool:
    """Whether the GPU pipeline runs this model without padding (BERT-like: a budget of real tokens)."""
    from sbert.inference.fast_bert import supports

    # the runners' input module: a dense model's transformer, a SPLADE body, a cross-encoder's pairs
    planning = getattr(model, "planning", None)
    module = planning.input_module if planning is not None else getattr(model, "input_module", None)
    network = getattr(module, "model", None)
    return network is not None and supports(network)


@dataclass(frozen=True)
class ServingPlan:
    """What runs a served model's batches (``/health``'s ``serving``; the start-up line).

    Attributes:
        device: ``cpu``, ``cuda:0``...
        precision, backend: The engine plan's.
        runner: ``cuda-pipeline`` (the GPU pipeline), ``torch``, ``openvino``, ``openvino-packed``
            or ``static``.
        max_batch_tokens: Most tokens of one batch handed to the runner.
        tokens: What those tokens count: ``real`` (unpadded) or ``padded`` (sentences × longest).
        graphs: Small batches replay CUDA graphs (the GPU pipeline on a model it unpads).
    """

    device: str
    precision: str
    backend: str
    runner: str
    max_batch_tokens: int
    tokens: str
    graphs: bool

    @classmethod
    def of(cls, model: Any, max_batch_tokens: int, pack: bool) -> ServingPlan:
        plan = model.plan
        gpu = on_gpu_pipeline(model)
        if getattr(model, "is_static", False):
            runner = "static"
        elif gpu:
            runner = "cuda-pipeline"
        elif plan.backend == "openvino":
            runner = "openvino-packed" if pack and plan.packs else "openvino"
        else:
            runner = "torch"
        real = runner == "openvino-packed" or (gpu and unpadded(model))
        return cls(
            device=plan.device,
            precision=plan.precision,
            backend=plan.backend,
            runner=runner,
            max_batch_tokens=max_batch_tokens,
            tokens="real" if real else "padded",
            graphs=gpu and unpadded(model),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "precision": self.precision,
            "backend": self.backend,
            "runner": self.runner,
            "max_batch_tokens": self.max_batch_tokens,
            "batch_tokens": self.tokens,
            "cuda_graphs": self.graphs,
        }

    def line(self) -> str:
        """``cuda:0, float16, torch on the GPU pipeline, batches of up to 16384 real tokens, CUDA
        graphs for small batches``: the start-up line's part."""
        runner = {"cuda-pipeline": "torch on the GPU pipeline", "openvino-packed": "openvino, packed batches"}
        text = (
            f"{self.device}, {self.precision}, {runner.get(self.runner, self.runner)}, "
            f"batches of up to {self.max_batch_tokens} {self.tokens} tokens"
        )
        return text + (", CUDA graphs for small batches" if self.graphs else "")
