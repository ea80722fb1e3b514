"""The engines one encoder runs on, as its plan says: PyTorch (float32, or bf16 through FastBert or
autocast) and OpenVINO graphs, each built once and rebuilt when the weights change.

The encoder asks; this module resolves the plan, builds what it needs and remembers why an engine
could not be used, so that the plan, not a second guess, tells ``encode()`` what runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from sbert.inference.cpu import CpuCapabilities
from sbert.inference.cuda_pipeline import DTYPES, CudaPipeline
from sbert.inference.fast_bert import FastBert, parameter_version, supports
from sbert.inference.openvino_engine import OpenVinoEngine
from sbert.inference.packing import packable
from sbert.inference.plan import EnginePlan, make_plan
from sbert.inference.precision import check_backend, check_precision, warn_once
from sbert.inference.probe import UnfaithfulGraph

if TYPE_CHECKING:
    from sbert.encoder import SentenceEncoder

logger = logging.getLogger("sbert")

Forward = Callable[[dict[str, Tensor]], Tensor]  # a padded batch's features → sentence vectors (batch, dim)


class Engines:
    """The plans of one :class:`~sbert.SentenceEncoder` and the engines that carry them out.

    Args:
        model: The encoder; its transformer, pooling and layers are what every engine computes.
    """

    def __init__(self, model: SentenceEncoder) -> None:
        self.model = model
        self.plans: dict[tuple[str, str, str, CpuCapabilities], EnginePlan] = {}
        self.openvino_failed: dict[str, str] = {}  # by precision: why OpenVINO does not run it
        self.fast: FastBert | None = None  # bf16 weights, rebuilt when the float32 weights change
        self.openvino: dict[str, OpenVinoEngine] = {}  # by precision, rebuilt like fast
        self.pipeline: tuple[tuple[object, ...], CudaPipeline] | None = None  # by precision and weights

    def plan_for(self, precision: str, backend: str | None = None) -> EnginePlan:
        """The plan for ``precision`` on ``backend`` (default: the model's requested backend), made
        once for the device and CPU capabilities and kept until an engine fails."""
        model = self.model
        backend = model.requested_backend if backend is None else check_backend(backend)
        key = (check_precision(precision), backend, str(model.device), model.cpu_capabilities)
        plan = self.plans.get(key)
        if plan is None:
            plan = make_plan(
                precision,
                backend,
                model.device,
                model.cpu_capabilities,
                lambda chosen: packable(model.transformer.model, chosen),
            )
            failed = self.openvino_failed.get(plan.precision)
            if plan.backend == "openvino" and plan.requested_backend == "auto" and failed:
                plan = plan.without_openvino(failed)
            if plan.backend == "openvino" and not model.pooling.include_prompt:
                # The compiled graph pools every token it is given; leaving a prompt out needs PyTorch.
                reason = (
                    f"{model.name}: its pooling leaves the prompt out (include_prompt false), "
                    "which OpenVINO does not run"
                )
                if plan.requested_backend == "openvino":
                    raise ValueError(f"{reason}; use backend='torch' or 'auto'")
                warn_once(f"{reason}; PyTorch runs it")
                plan = plan.without_openvino(reason)
            self.plans[key] = plan
        return plan

    def torch_forward(self, precision: str) -> Forward:
        """The batch → sentence vectors function for ``precision`` on PyTorch.

        bf16 on CPU runs FastBert (weights converted once; 1.7-2× faster than autocast on the measured
        CPU); other models and CUDA use autocast around the float32 module.
        """
        model = self.model
        if precision == "float32":
            return model
        network = model.transformer.model
        if model.device.type == "cpu" and supports(network):
            if self.fast is None or self.fast.version != parameter_version(network):
                self.fast = FastBert(network, torch.bfloat16)
            return self._fast_forward
        return lambda features: self._autocast_forward(features, DTYPES.get(precision, torch.bfloat16))

    def cuda_pipeline(self, precision: str) -> CudaPipeline:
        """The GPU pipeline (:mod:`sbert.inference.cuda_pipeline`) for ``precision``, built again
        whenever the weights or the device have changed (its weights are converted copies)."""
        model = self.model
        key = (precision, str(model.device), parameter_version(model.transformer.model))
        if self.pipeline is None or self.pipeline[0] != key:
            pipeline = CudaPipeline(model.transformer, model.pooling, model.after_pooling, DTYPES[precision])
            self.pipeline = (key, pipeline)
        return self.pipeline[1]

    def openvino_engine(self, precision: str) -> OpenVinoEngine | None:
        """The compiled engine for ``precision``, converted again whenever the weights have changed.

        ``None`` (with a one-line warning) when OpenVINO cannot convert this model, or its graph
        fails its probe, and the backend was ``auto``: encode() then runs on PyTorch. Asked for
        explicitly, the error is raised.
        """
        model = self.model
        engine = self.openvino.get(precision)
        calibration = model.calibration_sentences
        if (
            engine is None
            or engine.version != parameter_version(model.transformer.model)
            or engine.calibration is not calibration
            or engine.native_bf16 != model.cpu_capabilities.bf16
        ):
            try:
                engine = OpenVinoEngine(
                    model.transformer,
                    model.pooling,
                    precision,
                    calibration,
                    native_bf16=model.cpu_capabilities.bf16,
                    reference=self.reference_pooled,
                )
            except UnfaithfulGraph as error:  # compiled, but its probe vectors are wrong
                if model.requested_backend == "openvino":
                    raise UnfaithfulGraph(f"{model.name}: {error}") from error
                self._without_openvino(precision, f"{model.name}: {error}; PyTorch runs it instead")
                return None
            except ValueError:  # bad input (an empty calibration set): the caller's to fix
                raise
            except Exception as error:  # an architecture OpenVINO cannot convert
                if model.requested_backend == "openvino":
                    raise
                reason = f"OpenVINO could not compile {model.name} ({error}); PyTorch runs it instead"
                self._without_openvino(precision, reason)
                return None
            self.openvino[precision] = engine
        return engine

    def reference_pooled(self, ids: Sequence[Sequence[int]]) -> Tensor:
        """Pooled vectors (n, hidden) of token ids by PyTorch in float32: what a compiled graph must give."""
        model = self.model
        features = {key: value.to(model.device) for key, value in model.transformer.collate(ids).items()}
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                token_embeddings = model.transformer(features)  # (batch, seq, hidden)
                return model.pooling(token_embeddings, features["attention_mask"]).float().cpu()
        finally:
            model.train(was_training)

    def _without_openvino(self, precision: str, reason: str) -> None:
        # Recorded in the plan: precision and backend then report what PyTorch runs.
        self.openvino_failed[precision] = reason
        logger.warning(reason)
        self.plans.clear()

    def _fast_forward(self, features: dict[str, Tensor]) -> Tensor:
        assert self.fast is not None
        mask = features["attention_mask"]
        token_embeddings = self.fast(features["input_ids"], mask)  # (batch, seq, hidden)
        pooled = self.model.pooling(token_embeddings, mask, prompt_length(features))
        return self.model.after_pooling(pooled)

    def _autocast_forward(self, features: dict[str, Tensor], dtype: torch.dtype) -> Tensor:
        with torch.autocast(self.model.device.type, dtype=dtype):
            return self.model(features).float()


def prompt_length(features: Mapping[str, Tensor]) -> int:
    """The prompt's tokens, which pooling leaves out where ``include_prompt`` is off (0: none)."""
    return int(features["prompt_length"]) if "prompt_length" in features else 0
