"""Runners: token ids → pooled sentence vectors, one per kind of engine, built from the modules.

A plan (:mod:`sbert.inference.plan`) names what runs; :class:`Runners` builds it from a model's
modules (its input module, pooling and the layers after pooling, never the model object) and keeps
what is costly to build (bf16 weights, compiled OpenVINO graphs) until the weights change. A runner
that cannot be built raises :class:`RunnerFailed` with the :class:`~sbert.inference.plan.Failure` to
record; the plan made again then names the next-best runner.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from sbert.base.batching import length_sorted_batches
from sbert.base.weights import WeightsStamp, weights_version
from sbert.inference.cuda.pipeline import DTYPES, CudaPipeline, PipelineOptions
from sbert.inference.fast_bert import FastBert, supports
from sbert.inference.openvino.engine import OpenVinoEngine
from sbert.inference.packing import MAX_PASS_TOKENS, packed_passes
from sbert.inference.plan import ANY_PRECISION, EnginePlan, Failure
from sbert.inference.precision import CALIBRATED, ComputeBackend, warn_once
from sbert.inference.probe import UnfaithfulGraph
from sbert.inference.runner import Runner, RunOptions
from sbert.modules import Normalize, Pooling, StaticEmbedding, Transformer
from sbert.modules.static_embedding import CHUNK, FlatIds

logger = logging.getLogger("sbert")


class RunnerFailed(Exception):
    """A runner could not be built (backend ``auto``): ``failure`` is what to record and plan around."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


def after_pooling(layers: Iterable[nn.Module], embeddings: Tensor, normalize: bool = True) -> Tensor:
    """The layers after pooling (Dense, Normalize) on (batch, hidden) vectors; ``normalize=False``
    skips Normalize. Every runner's pooled vectors go through this one function."""
    for layer in layers:
        if normalize or not isinstance(layer, Normalize):
            embeddings = layer(embeddings)
    return embeddings


@contextmanager
def evaluating(modules: Sequence[nn.Module]) -> Iterator[None]:
    """The modules in eval mode (no dropout) for the block, then back in the mode each was in.

    A module already in eval mode throughout is left alone: switching a BERT's hundred submodules
    there and back costs about a millisecond, which one query's latency on a GPU would notice.
    """
    switched = [(module, module.training) for module in modules if _training(module)]
    for module, _ in switched:
        module.eval()
    try:
        yield
    finally:
        for module, mode in switched:
            module.train(mode)


class ModeOfModel:
    """For a wrapper the runners take in a model's place (a SPLADE body, a cross-encoder's pair
    transformer and head): its mode is its child's named :attr:`mode_of` (``model``), never its
    own. A wrapper left "training" by its constructor would make :func:`evaluating` put the model
    back in training mode (dropout on) after every run; ``train(mode)`` still sets the child's."""

    mode_of = "model"

    @property
    def training(self) -> bool:
        return bool(getattr(self, self.mode_of).training)

    @training.setter
    def training(self, mode: bool) -> None:
        pass  # the model's own mode counts


def on_cuda(device: str) -> bool:
    """Whether a plan's device (``plan.device``) is a CUDA device, where ``encode()`` runs the GPU pipeline."""
    return torch.device(device).type == "cuda"


def _training(module: nn.Module) -> bool:
    return any(sub.training for sub in module.modules())


def option_batches(ids: Sequence[Sequence[int]], options: RunOptions) -> list:  # type: ignore[type-arg]
    """Length-sorted batches of ``ids`` (index arrays) as ``options`` cut them: ``batch_size``,
    ``max_tokens`` padded tokens, the cheapest cuts where ``batch_cost_tokens`` is set."""
    lengths = [len(row) for row in ids]
    return length_sorted_batches(lengths, options.batch_size, options.max_tokens, options.batch_cost_tokens)


Forward = Callable[[dict[str, Tensor], int], Tensor]  # padded batch, prompt length → pooled (batch, hidden)


class TorchRunner:
    """PyTorch on padded, length-sorted batches (float32, or bf16 through FastBert or autocast)."""

    def __init__(
        self,
        transformer: Transformer,
        pooling: Pooling,
        layers: Iterable[nn.Module],
        forward: Forward,
        device: torch.device,
    ):
        self.transformer, self.pooling, self.layers, self.forward = transformer, pooling, layers, forward
        self.device = device  # the plan's: where the weights are

    def run(
        self, ids: Sequence[Sequence[int]], options: RunOptions, progress: Callable[[int], None]
    ) -> Tensor:
        device = self.device
        out: Tensor | None = None
        with evaluating([self.transformer, self.pooling, *self.layers]), torch.inference_mode():
            for batch in option_batches(ids, options):
                features = self.transformer.collate([ids[i] for i in batch])  # (batch, longest) each
                features = {key: value.to(device) for key, value in features.items()}
                pooled = self.forward(features, options.prompt_length)  # (batch, hidden)
                vectors = after_pooling(self.layers, pooled).float().cpu()  # (batch, dim)
                if out is None:
                    out = torch.empty((len(ids), vectors.shape[1]), dtype=torch.float32)
                out[torch.from_numpy(batch)] = vectors
                progress(len(batch))
        assert out is not None, "a runner runs one sentence at least"
        return out


class StaticRunner:
    """A static token table: one sparse mean (``embedding_bag``) per chunk of sentences, no batches."""

    def __init__(self, static: StaticEmbedding, layers: Iterable[nn.Module]) -> None:
        self.static, self.layers = static, layers

    def run(
        self, ids: Sequence[Sequence[int]], options: RunOptions, progress: Callable[[int], None]
    ) -> Tensor:
        flat = ids if isinstance(ids, FlatIds) else FlatIds.of(ids)
        parts = []
        with torch.inference_mode():
            for start in range(0, len(flat), CHUNK):
                stop = min(start + CHUNK, len(flat))
                features = self.static.flat(*flat.span(start, stop))
                parts.append(after_pooling(self.layers, self.static(features)).float().cpu())  # (chunk, dim)
                progress(stop - start)
        return parts[0] if len(parts) == 1 else torch.cat(parts)  # no copy for up to CHUNK sentences


class OpenVinoRunner:
    """A compiled OpenVINO graph on padded batches, or on packed rows where it packs."""

    def __init__(self, engine: OpenVinoEngine, layers: Iterable[nn.Module], packed: bool) -> None:
        self.engine, self.layers, self.packed = engine, layers, packed

    def run(
        self, ids: Sequence[Sequence[int]], options: RunOptions, progress: Callable[[int], None]
    ) -> Tensor:
        # One sentence has no padding to save: the padded graph runs it, on one stream over every
        # thread from the second such call (a served query; openvino.one_stream).
        if self.packed and len(ids) > 1:
            lengths = [len(row) for row in ids]
            limit = options.max_tokens or MAX_PASS_TOKENS
            passes = packed_passes(lengths, len(self.engine.requests), max_pass_tokens=limit)
            sizes = iter([sum(map(len, rows)) for rows in passes])
            pooled = self.engine.embed_packed(ids, passes, lambda: progress(next(sizes)))
        else:
            batches = option_batches(ids, options)
            counts = iter([len(batch) for batch in batches])
            pooled = self.engine.embed(ids, batches, lambda: progress(next(counts)))  # (n, hidden)
        with torch.inference_mode():
            return after_pooling(self.layers, pooled).float().cpu()


class Runners:
    """The runners of one model's modules, and what they keep between calls.

    Args:
        input_module: The Transformer or static table that turns token ids into vectors.
        pooling: Token vectors → sentence vector (a static table pools by itself).
        layers: The layers after pooling.
    """

    def __init__(
        self, input_module: Transformer | StaticEmbedding, pooling: Pooling, layers: Iterable[nn.Module]
    ) -> None:
        self.input_module, self.pooling, self.layers = input_module, pooling, layers
        self.fast: tuple[WeightsStamp, FastBert] | None = (
            None  # bf16 weights, by the float32 weights' version
        )
        self.openvino: dict[str, OpenVinoEngine] = {}  # by precision, rebuilt like fast
        self.pipeline: tuple[tuple[object, ...], CudaPipeline] | None = None  # by precision and weights
        # How the GPU pipeline runs (None: its defaults); `sbert serve --max-batch-tokens` sets it.
        self.pipeline_options: PipelineOptions | None = None

    def __getstate__(self) -> dict[str, object]:
        """Pickled or deep-copied without what it built: every one is a cache, built again on first
        use, and OpenVINO's compiled requests cannot be copied (a model that had encoded could not
        be shipped to a Ray worker or ``copy.deepcopy``-ed)."""
        return self.__dict__ | {"fast": None, "openvino": {}, "pipeline": None}

    def select(
        self, plan: EnginePlan, name: str, calibration: Sequence[str] | None = None, pack: bool = False
    ) -> Runner:
        """The runner ``plan`` names.

        Raises:
            RunnerFailed: OpenVINO cannot compile the model or its graph misses the probe, with
                backend ``auto`` (asked for explicitly, the error itself is raised).
        """
        module = self.input_module
        if isinstance(module, StaticEmbedding):
            return StaticRunner(module, self.layers)
        if plan.backend == ComputeBackend.TORCH and on_cuda(plan.device):
            return self._cuda_pipeline(plan.precision, module)
        if plan.backend == ComputeBackend.TORCH:
            device = torch.device(plan.device)
            forward = self._torch_forward(plan.precision, module, device)
            return TorchRunner(module, self.head(plan.precision), self.layers, forward, device)
        engine = self._openvino(plan, name, calibration, module)
        packed = pack and plan.packs
        if packed and (failure := engine.packed_failure()):
            warn_once(f"{name}: {failure}; padded batches run instead")
            packed = False
        return OpenVinoRunner(engine, self.layers, packed)

    def head(self, precision: str) -> Pooling:
        """What runs after the body at ``precision``: the pooling, or a head that computes at a
        precision of its own (``at_precision``: a SPLADE head's decoder), the plan's."""
        at_precision = getattr(self.pooling, "at_precision", None)
        return self.pooling if at_precision is None else at_precision(precision)  # type: ignore[no-any-return]

    def _cuda_pipeline(self, precision: str, transformer: Transformer) -> CudaPipeline:
        """The GPU pipeline (:mod:`sbert.inference.cuda.pipeline`) for ``precision``, built again
        whenever the weights have changed, a move to another device included (its weights are
        converted copies). The weights' key is read on the host
        (:func:`~sbert.base.weights.weights_version`, whose storage pointers change with ``.to()``):
        a value read here would make every call wait for the device."""
        key = (precision, weights_version(transformer.model), self.pipeline_options)
        if self.pipeline is None or self.pipeline[0] != key:
            layers = self.layers
            pipeline = CudaPipeline(
                transformer,
                self.head(precision),
                lambda pooled: after_pooling(layers, pooled),
                DTYPES[precision],
                self.pipeline_options,
            )
            self.pipeline = (key, pipeline)
        return self.pipeline[1]

    def _torch_forward(self, precision: str, transformer: Transformer, device: torch.device) -> Forward:
        """bf16 on CPU runs FastBert (weights converted once; 1.7-2× faster than autocast on the
        measured CPU); other models and CUDA use autocast around the float32 module."""
        pooling = self.head(precision)

        def float32(features: dict[str, Tensor], prompt_length: int) -> Tensor:
            token_embeddings = transformer(features)  # (batch, seq, hidden)
            return pooling(token_embeddings, features["attention_mask"], prompt_length)

        if precision == "float32":
            return float32
        network = transformer.model
        if device.type == "cpu" and supports(network):
            if self.fast is None or not self.fast[0].holds(network):
                self.fast = (WeightsStamp(network), FastBert(network, torch.bfloat16))
            fast = self.fast[1]
            first_token = bool(getattr(pooling, "reads_first_token", False))  # a cross-encoder's head

            def bf16(features: dict[str, Tensor], prompt_length: int) -> Tensor:
                mask = features["attention_mask"]
                tokens = fast(features["input_ids"], mask, first_token)  # (batch, seq or 1, hidden)
                return pooling(tokens, mask[:, : tokens.shape[1]], prompt_length)  # (batch, hidden)

            return bf16

        def autocast(features: dict[str, Tensor], prompt_length: int) -> Tensor:
            with torch.autocast(device.type, dtype=DTYPES.get(precision, torch.bfloat16)):
                return float32(features, prompt_length).float()

        return autocast

    def _openvino(
        self, plan: EnginePlan, name: str, calibration: Sequence[str] | None, transformer: Transformer
    ) -> OpenVinoEngine:
        """The compiled engine for the plan's precision, converted again whenever the weights, the
        calibration sentences or the CPU's bf16 have changed."""
        engine = self.openvino.get(plan.precision)
        if (
            engine is not None
            and engine.weights.holds(transformer.model)
            and engine.calibration is calibration
            and engine.native_bf16 == plan.cpu.bf16
        ):
            return engine
        strict = plan.requested_backend == ComputeBackend.OPENVINO
        try:
            engine = OpenVinoEngine(
                transformer,
                self.head(plan.precision),
                plan.precision,
                calibration,
                native_bf16=plan.cpu.bf16,
                reference=self.reference_pooled,
            )
        except UnfaithfulGraph as error:  # compiled, but its probe vectors are wrong
            if strict:
                raise UnfaithfulGraph(f"{name}: {error}") from error
            raise RunnerFailed(
                Failure(ComputeBackend.OPENVINO, plan.precision, f"{name}: {error}")
            ) from error
        except ValueError:  # bad input (an empty calibration set): the caller's to fix
            raise
        except Exception as error:  # an architecture OpenVINO cannot convert
            if strict:
                raise
            # A calibration that fails says nothing of the plain graphs; a conversion, of all of them.
            failed = plan.precision if plan.precision in CALIBRATED else ANY_PRECISION
            reason = f"OpenVINO could not compile {name} ({error})"
            raise RunnerFailed(Failure(ComputeBackend.OPENVINO, failed, reason)) from error
        self.openvino[plan.precision] = engine
        return engine

    def reference_pooled(self, ids: Sequence[Sequence[int]]) -> Tensor:
        """Pooled vectors (n, hidden) of token ids by PyTorch in float32: what a compiled graph must give.

        OpenVINO runs on the CPU only (a plan for another device never names it), so the weights are
        there, as the collated features are."""
        transformer = self.input_module
        assert isinstance(transformer, Transformer)
        features = transformer.collate(ids)
        pooling = self.head("float32")
        with evaluating([transformer, pooling]), torch.inference_mode():
            token_embeddings = transformer(features)  # (batch, seq, hidden)
            return pooling(token_embeddings, features["attention_mask"]).float().cpu()
