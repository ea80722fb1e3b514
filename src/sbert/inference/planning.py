"""What ``encode()`` runs on a model: the compute precision and backend asked for, the plan made from
them once per device and CPU (:mod:`sbert.inference.plan`), the runner that plan names, with the
next-best plan where a runner fails, and the run of the prompted texts through it.

:class:`~sbert.SentenceEncoder` (and :class:`~sbert.CrossEncoder`) holds one :class:`Planning`, made
for its modules, as ``model.planning``, and calls it; the model's own names for it (``model.plan``,
``model.precision``, ``model.requested_backend = ...``) are :class:`Planned` attributes that read and
set the planning's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar, overload

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from sbert.base.inputs import tokenized
from sbert.inference.cpu import CpuCapabilities, this_cpu
from sbert.inference.cuda.pipeline import CudaPipeline
from sbert.inference.packing import packable
from sbert.inference.plan import EnginePlan, Failure, PlanRequest, make_plan
from sbert.inference.precision import (
    ComputeBackend,
    ComputePrecision,
    check_backend,
    check_precision,
    warn_once,
)
from sbert.inference.runner import Runner, RunOptions
from sbert.inference.runners import RunnerFailed, Runners, evaluating
from sbert.inference.steps import check_finite
from sbert.modules import Pooling, StaticEmbedding, Tokenized, Transformer

logger = logging.getLogger("sbert")

T = TypeVar("T")


class Planning:
    """The compute side of one model's modules: what was asked for, what runs, and why.

    Args:
        input_module: The Transformer or static token table that turns token ids into vectors.
        pooling: Token vectors → sentence vector (a static table pools by itself).
        layers: The layers after pooling (the model's own list: a layer added later is run too).
        name: The model's name, for messages.
        fixed: Plan float32 on PyTorch whatever is asked (the exact path of a stack no runner
            serves); a static token table is always so.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained(device="cpu", precision="float32")
        >>> planning = model.planning
        >>> planning.plan.precision, planning.device.type, planning.plan is model.plan
        ('float32', 'cpu', True)
    """

    def __init__(
        self,
        input_module: Transformer | StaticEmbedding,
        pooling: Pooling,
        layers: Iterable[nn.Module],
        name: str = "unnamed",
        fixed: bool = False,
    ) -> None:
        self.name = name
        self.fixed = fixed
        self.input_module, self.pooling, self.layers = input_module, pooling, layers
        self.runners = Runners(input_module, pooling, layers)  # and what they keep
        # The plans are made for this CPU's capabilities; tests simulate others.
        self.cpu_capabilities: CpuCapabilities = this_cpu()
        # A table lookup and a mean gain nothing from lower precision or another engine.
        self.requested_precision = "float32" if self.is_static else "auto"
        self.requested_backend = "torch" if self.is_static else "auto"
        self.calibration_sentences: Sequence[str] | None = None  # mixed, int8; None: the bundled set
        self._plans: dict[tuple[str, str, str, CpuCapabilities], EnginePlan] = {}
        self._failures: list[Failure] = []  # runners that failed here: plans go around them

    @property
    def is_static(self) -> bool:
        """Whether the input module is a static token table (:class:`~sbert.modules.StaticEmbedding`)."""
        return isinstance(self.input_module, StaticEmbedding)

    @property
    def device(self) -> torch.device:
        """Where the weights are, so where ``encode()`` runs: the one place it is read. The plans
        are made for it and carry it (``plan.device``, where the runners read it); it is read each
        time a plan is asked for, so a model moved by ``.to()`` is planned anew where it now is."""
        return next(self.input_module.parameters()).device

    @property
    def requested_precision(self) -> ComputePrecision:
        """The precision asked for (``auto``, ``float32``, ...); :attr:`precision` is what runs."""
        return self._requested_precision

    @requested_precision.setter
    def requested_precision(self, precision: str) -> None:
        self._requested_precision = check_precision(precision)

    @property
    def requested_backend(self) -> ComputeBackend:
        """The backend asked for (``auto``, ``torch``, ``openvino``); :attr:`backend` is what runs."""
        return self._requested_backend

    @requested_backend.setter
    def requested_backend(self, backend: str) -> None:
        self._requested_backend = check_backend(backend)

    def set_precision(self, precision: str | None = None, backend: str | None = None) -> EnginePlan:
        """Ask for another compute precision or backend; returns the plan that now runs.

        ``precision`` is the compute precision, as in ``from_pretrained`` (sentence-transformers
        has no such method; its ``encode(precision=...)`` is the output precision).

        Examples:
            >>> from sbert import SentenceEncoder
            >>> SentenceEncoder.from_pretrained().set_precision("float32").precision
            'float32'
        """
        if precision is not None:
            self.requested_precision = precision
        if backend is not None:
            self.requested_backend = backend
        return self.plan

    @property
    def plan(self) -> EnginePlan:
        """What ``encode()`` runs (:class:`~sbert.inference.plan.EnginePlan`): precision, backend,
        packing and why each differs from what was asked for. Resolved once for the requested
        precision and backend, the device and :attr:`cpu_capabilities`; made anew only when one of them changes."""
        return self.plan_for(self.requested_precision)

    @property
    def precision(self) -> str:
        """The compute precision ``encode()`` runs at here: ``"float32"``, ``"bfloat16"``,
        ``"float16"`` (CUDA), ``"mixed"`` or ``"int8"`` (sentence-transformers has no
        ``model.precision``; the output precision is ``encode(precision=...)``).

        ``auto`` resolves to ``bfloat16`` where the CPU multiplies bf16 natively, ``float16`` on a
        CUDA GPU with tensor cores (:attr:`plan`'s ``reason`` says why), else ``float32``; never to a calibrated precision, whose first use costs seconds. It depends only
        on the device, the backend and the installed extras, never on an input's length or on what
        is cached, so one sentence gets one vector from every call (an index and its queries agree).
        """
        return self.plan.precision

    @property
    def backend(self) -> str:
        """The engine ``encode()`` runs on: ``"torch"`` or ``"openvino"``."""
        return self.plan.backend

    @property
    def packs(self) -> bool:
        """Whether ``encode(pack=True)`` packs rows here: a BERT model on OpenVINO in float32 or bf16."""
        return self.plan.packs

    def plan_for(self, precision: str, backend: str | None = None) -> EnginePlan:
        """What ``encode()`` runs when asked for ``precision`` on ``backend`` (default: the model's
        requested backend). Made once for the device and CPU; a runner that fails changes it (it says
        why, once)."""
        request = PlanRequest(
            check_precision(precision),
            self.requested_backend if backend is None else check_backend(backend),
            packs_at=self._packs_at(),
            openvino_refusal=None
            if getattr(self.pooling, "include_prompt", True)
            else f"{self.name}: its pooling leaves the prompt out (include_prompt false), which OpenVINO does not run",
            fixed=self.fixed or self.is_static,
            failures=tuple(self._failures),
        )
        device = self.device
        key = (request.precision, request.backend, str(device), self.cpu_capabilities)
        plan = self._plans.get(key)
        if plan is None:
            plan = make_plan(request, self.cpu_capabilities, device)
            for line in plan.fallbacks:
                warn_once(line)
            self._plans[key] = plan
        return plan

    def _packs_at(self) -> frozenset[str]:
        network = getattr(self.input_module, "model", None)
        return frozenset(p for p in ("float32", "bfloat16") if network is not None and packable(network, p))

    def encode_plan(self, precision: str | None) -> EnginePlan:
        """The plan ``encode(compute_precision=precision)`` runs (``None``: the requested precision)."""
        if self.is_static and precision not in (None, "auto", "float32"):
            raise ValueError(f"a static model computes in float32, not {precision!r}")
        return self.plan_for(self.requested_precision if precision is None else precision)

    def runner(self, plan: EnginePlan, pack: bool) -> tuple[EnginePlan, Runner]:
        """The runner the plan names; where one fails, the next-best plan's (said once)."""
        while True:
            try:
                return plan, self.runners.select(plan, self.name, self.calibration_sentences, pack)
            except RunnerFailed as failed:
                self._failures.append(failed.failure)
                self._plans.clear()
                plan = self.plan_for(plan.requested_precision, plan.requested_backend)

    def encode_token_ids(self, ids: Sequence[Sequence[int]], options: RunOptions | None = None) -> Tensor:
        """Vectors (n, dim), float32 on the CPU, of inputs already tokenized (the model's special
        tokens included, each at most ``max_seq_length`` long), by the runner ``encode()`` runs text
        on: the same plan (precision, backend, packing), so a text and its token ids get one vector
        (``sbert serve``'s token-id inputs). The ids are not checked against the vocabulary.

        Raises:
            ValueError: no inputs.
        """
        if not ids:
            raise ValueError("encode_token_ids needs at least one input")
        options = options or RunOptions()
        plan, runner = self.runner(self.encode_plan(None), options.pack)
        with evaluating([self.input_module, self.pooling, *self.layers]):  # a padded fallback's modules
            embeddings = runner.run(ids, options, lambda done: None)
        check_finite(embeddings, plan)
        return embeddings

    def token_ids(self, sentences: Sequence[str]) -> Tokenized:
        """Token ids of each sentence, unpadded and truncated to ``max_seq_length``."""
        return tokenized(self.input_module.tokenize, sentences)  # lone surrogates replaced

    def run(
        self, plan: EnginePlan, texts: list[str], options: RunOptions, show_progress_bar: bool
    ) -> tuple[EnginePlan, Tensor]:
        """Vectors (n, dim) of the prompted texts by the runner the plan names, and the plan that ran."""
        plan, runner = self.runner(plan, options.pack)
        truncated: list[int] = []  # appended to from the GPU pipeline's tokenizing threads

        def ids_of(chunk: Sequence[str]) -> Sequence[Sequence[int]]:
            tokens = self.token_ids(chunk)
            truncated.append(tokens.truncated)
            return tokens.ids

        bar = tqdm(total=len(texts), desc="Encoding", unit="sentence", disable=not show_progress_bar)
        try:
            if isinstance(runner, CudaPipeline):  # it tokenizes a chunk ahead while the device runs
                with evaluating([self.input_module, self.pooling, *self.layers]):  # its padded fallback
                    embeddings = runner.run_texts(texts, ids_of, options, bar.update)
            else:
                embeddings = runner.run(ids_of(texts), options, bar.update)
        finally:
            bar.close()
        if sum(truncated):
            logger.warning(
                "%d of %d inputs were longer than max_seq_length=%d tokens and were truncated",
                sum(truncated),
                len(texts),
                self.input_module.max_seq_length,
            )
        return plan, embeddings


class Planned(Generic[T]):
    """A model's attribute that is its planning's: ``model.precision`` reads ``model.planning.precision``,
    ``model.requested_backend = "torch"`` sets ``model.planning.requested_backend`` (one without a
    setter there cannot be set). The model keeps its flat names; the state and the work are the planning's.

    Examples:
        >>> class Model:
        ...     precision = Planned[str]()
        ...     def __init__(self, planning):
        ...         self.planning = planning
        >>> from types import SimpleNamespace
        >>> Model(SimpleNamespace(precision="float32")).precision
        'float32'
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    @overload
    def __get__(self, model: None, owner: type) -> Planned[T]: ...
    @overload
    def __get__(self, model: object, owner: type) -> T: ...
    def __get__(self, model: object, owner: type) -> Planned[T] | T:
        if model is None:
            return self
        return getattr(model.planning, self.attribute)  # type: ignore[attr-defined,no-any-return]

    def __set__(self, model: object, value: Any) -> None:
        setattr(model.planning, self.attribute, value)  # type: ignore[attr-defined]
