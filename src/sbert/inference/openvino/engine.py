"""OpenVINO engine: the encoder compiled for the CPU in float32, bf16, mixed or calibrated int8.

An optional extra (``pip install "sbert[openvino]"``: ``openvino`` and, for int8, ``nncf``; neither
touches the installed torch). The PyTorch module is converted directly with
``openvino.convert_model`` (no optimum, no ONNX file), pooling included, so one compiled graph maps
token ids to sentence vectors.

Why it pays on CPUs: OpenVINO packs each weight matrix once for the CPU's bf16 or VNNI int8
instructions and fuses the small element-wise steps around them, and its throughput mode runs one
batch per core instead of splitting every small matrix product across cores.

int8 is static: activation ranges come from a calibration set once (with SmoothQuant moving
activation outliers into the weights), so a sentence's vector never depends on its batch neighbours.
``mixed`` quantizes only the projections that tolerate it (:data:`MIXED_INT8_LAYERS`) and runs the
rest in bf16. Calibrated graphs are kept on disk (:mod:`sbert.inference.openvino.graph_cache`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from sbert.base.batching import BATCH_COST_TOKENS, length_sorted_batches
from sbert.base.weights import WeightsStamp
from sbert.inference.cpu import this_cpu
from sbert.inference.openvino import graph_cache
from sbert.inference.openvino.one_stream import OneStream
from sbert.inference.openvino.runtime import compile_config, host_logging_kept, import_openvino
from sbert.inference.openvino.runtime import keep_signal_stack as _keep_signal_stack
from sbert.inference.packing import PackedTransformer, packable, pass_feeds
from sbert.inference.precision import CALIBRATED
from sbert.inference.probe import UnfaithfulGraph, check_probe, probe_texts
from sbert.modules import Pooling, Transformer

# SmoothQuant strength for the matrix products. NNCF's transformer default (0.95) moved so much range
# into the weights that some sentences lost a quarter of their cosine to fp32 on all-MiniLM-L6-v2;
# 0.8 keeps STSb Spearman within 0.1 of fp32 (benchmarks/encode_speed.py measures it).
SMOOTH_QUANT_ALPHA = 0.8
CALIBRATION_BATCH_SIZE = 32

# The matrix products ``mixed`` runs in int8 (BERT and RoBERTa names). Quantized one group at a time
# on all-MiniLM-L6-v2 (benchmarks/mixed_layers.py), query + key + value moved STSb test vectors by at
# most 0.0021 in cosine distance and the feed-forward input by 0.0022, while the attention output
# (0.0065) and feed-forward output (0.014) moved them most. Value is left out: with it the distance
# grew to 0.0032 for no measurable speed.
MIXED_INT8_LAYERS = re.compile(r"attention\.self\.(query|key)/|intermediate\.dense/")

logger = logging.getLogger("sbert")

ENGINE_PRECISIONS = ("float32", "bfloat16", *CALIBRATED)

_Rows = Sequence[int] | np.ndarray  # the sentences whose vectors one inference computes, in order


def default_calibration_sentences() -> list[str]:
    """The bundled calibration set: 166 sentences of many genres (none from an STS test set).

    Captions, news, questions, short answers, reviews, fiction, technical and legal text, numbers,
    chat, and a few non-English lines, so that activation ranges cover what users embed.
    """
    text = resources.files("sbert.resources").joinpath("calibration_sentences.txt").read_text("utf-8")
    return [line for line in text.splitlines() if line.strip()]


class _PooledTransformer(nn.Module):
    """Token ids → pooled sentence vectors, the graph OpenVINO compiles."""

    def __init__(self, transformer: Transformer, pooling: nn.Module) -> None:
        super().__init__()
        self.transformer = transformer
        self.pooling = pooling

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        features = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self.transformer.accepts_token_types:
            features["token_type_ids"] = torch.zeros_like(input_ids)
        token_embeddings = self.transformer(features)  # (batch, seq, hidden)
        return self.pooling(token_embeddings, attention_mask)  # (batch, hidden)


class _TokenVectors(nn.Module):
    """A pooling that pools nothing: the graph's output is the token vectors ``(batch, seq, hidden)``
    (a head over real tokens runs on the host: :attr:`OpenVinoEngine.head`)."""

    def forward(self, token_embeddings: Tensor, attention_mask: Tensor) -> Tensor:
        return token_embeddings


class OpenVinoEngine:
    """Pooled sentence vectors from an OpenVINO-compiled copy of the transformer and pooling.

    Args:
        transformer: The encoder's transformer (converted as it is now; see :attr:`weights`).
        pooling: The encoder's pooling.
        precision: ``"float32"``, ``"bfloat16"``, ``"mixed"`` or ``"int8"``.
        calibration: mixed and int8: sentences whose activations fix the quantization ranges
            (default: :func:`default_calibration_sentences`).
        threads: CPU threads (default: ``torch.get_num_threads()``).
        native_bf16: Whether the CPU multiplies bf16 natively, so bf16 and mixed keep their bf16
            parts (default: this machine's, :func:`~sbert.inference.cpu.this_cpu`).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> encoder = SentenceEncoder.from_pretrained()
        >>> engine = OpenVinoEngine(encoder.transformer, encoder.pooling, "bfloat16")
        >>> tokenized = encoder.token_ids(["A man plays a guitar.", "A dog runs."])
        >>> engine.embed(tokenized.ids, length_sorted_batches(tokenized.lengths, 32)).shape
        torch.Size([2, 384])
    """

    def __init__(
        self,
        transformer: Transformer,
        pooling: Pooling,
        precision: str,
        calibration: Sequence[str] | None = None,
        threads: int | None = None,
        native_bf16: bool | None = None,
        reference: Callable[[Sequence[Sequence[int]]], Tensor] | None = None,
    ) -> None:
        """A ``pooling`` with ``pools_real_tokens`` (a SPLADE head) is kept out of the graph: the
        graph gives token vectors, and the head runs on the host on each output's real tokens."""
        import_openvino(with_nncf=precision in CALIBRATED)  # a clear error now if the extra is missing
        if precision not in ENGINE_PRECISIONS:
            raise ValueError(f"OpenVinoEngine runs {', '.join(ENGINE_PRECISIONS)}, not {precision!r}")
        self.calibration = calibration
        self.transformer = transformer
        self.pooling = pooling
        self.head: Callable[[Tensor, Tensor], Tensor] | None = (
            pooling if getattr(pooling, "pools_real_tokens", False) else None
        )
        self._graph_pooling: nn.Module = _TokenVectors() if self.head is not None else pooling
        self.precision = precision
        self.dim = pooling.output_dim
        self.threads = threads or torch.get_num_threads()
        self.native_bf16 = this_cpu().bf16 if native_bf16 is None else native_bf16
        self._packed_requests: list[Any] | None = None  # the packed graph, compiled on first use
        self._packed_failure: str | None = None  # why the packed graph failed its probe
        self._reference = reference
        self.graph_key: str | None = None  # the float graph's cache key (calibrated graphs: None)
        module = _PooledTransformer(transformer, self._graph_pooling)
        with _keep_signal_stack():
            if precision in CALIBRATED:
                model = self._calibrated(module, precision, calibration)
            else:
                model = self._plain(module)
            self.weights = WeightsStamp(transformer.model)  # after tracing, which bumps version counters
            self.requests = self._compile(model)
        if reference is not None:
            self._prove(self.requests, packed=False)
        config = compile_config(self.precision, self.native_bf16, self.threads)
        self.one_stream = OneStream(
            self.graph_key, config, self.threads, lambda r: self._prove(r, packed=False)
        )

    @property
    def can_pack(self) -> bool:
        """Whether :meth:`embed_packed` runs here (:func:`~sbert.inference.packing.packable`)."""
        return packable(self.transformer.model, self.precision)

    def _compile(self, model: Any) -> list[Any]:
        """One inference request per stream of ``model`` compiled for the CPU at this precision."""
        config = compile_config(self.precision, self.native_bf16, self.threads)
        compiled = import_openvino().Core().compile_model(model, "CPU", config)
        jobs = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))  # one per stream
        return [compiled.create_infer_request() for _ in range(jobs)]

    def _example_ids(self) -> Sequence[Sequence[int]]:
        return self.transformer.tokenize(["An example sentence.", "Another."]).ids

    def _plain(self, module: _PooledTransformer) -> Any:
        """The float graph (float32 and bf16 compile the same one), from the disk cache when this
        module was converted before: converting took 0.8 s of a cold 3-line `sbert encode`."""
        key = graph_cache.fingerprint(module, {"graph": "padded, not quantized", **self._output()})
        example = self._feeds(self._example_ids())
        model = graph_cache.load_or_build(key, lambda: self._convert(module, example))
        self.graph_key = key  # where the cache keeps it: a cold `sbert encode` reads it from there
        return model

    def _calibrated(
        self, module: _PooledTransformer, precision: str, calibration: Sequence[str] | None
    ) -> Any:
        """The quantized graph, from the disk cache when this module was calibrated so before."""
        sentences = default_calibration_sentences() if calibration is None else list(calibration)
        if not sentences:
            raise ValueError("int8 calibration needs at least one sentence")
        ids = self.transformer.tokenize(sentences).ids
        recipe = {
            "precision": precision,
            "smooth_quant_alpha": SMOOTH_QUANT_ALPHA,
            "int8_layers": MIXED_INT8_LAYERS.pattern if precision == "mixed" else "all",
            "calibration_ids": ids,
            **self._output(),
        }
        key = graph_cache.fingerprint(module, recipe)
        example = self._feeds(self._example_ids())
        return graph_cache.load_or_build(
            key, lambda: self._quantize(self._convert(module, example), ids, precision)
        )

    def _output(self) -> dict[str, str]:
        """What the graph gives, for its cache key where it is not pooled vectors."""
        return {"output": "token vectors"} if self.head is not None else {}

    def _convert(self, module: nn.Module, example: dict[str, np.ndarray]) -> Any:
        """``module`` traced on ``example`` (its inputs by name) into an OpenVINO model of any batch and length."""
        ov = import_openvino()
        from openvino.frontend.pytorch.ts_decoder import TorchScriptPythonDecoder

        was_training = self.transformer.training  # the wrapper is new; the transformer's mode counts
        module.eval()
        # transformers warns about an unrelated loss setting while the graph is traced.
        with torch.no_grad(), warnings.catch_warnings(), host_logging_kept(quiet=("transformers",)):
            warnings.simplefilter("ignore")  # tracer warnings about Python control flow in HF code
            # torch.jit.trace's own check runs the module twice more (a third of the conversion
            # time) to compare with the trace; the engine's vectors are tested against PyTorch's.
            decoder = TorchScriptPythonDecoder(
                module,
                example_input={name: torch.from_numpy(value) for name, value in example.items()},
                trace_kwargs={"check_trace": False},
            )
            model = ov.convert_model(decoder, input=[(name, [-1, -1], ov.Type.i64) for name in example])
        module.train(was_training)
        return model

    def _quantize(self, model: Any, ids: Sequence[Sequence[int]], precision: str) -> Any:
        import nncf
        from nncf.quantization.advanced_parameters import (
            AdvancedQuantizationParameters,
            AdvancedSmoothQuantParameters,
        )

        ignored = None
        if precision == "mixed":
            products = [
                op.get_friendly_name() for op in model.get_ordered_ops() if op.get_type_name() == "MatMul"
            ]
            kept = [name for name in products if not MIXED_INT8_LAYERS.search(name)]
            if len(kept) == len(products):
                logger.warning("no BERT-named projection to run in int8; precision='mixed' runs as bf16")
                return model
            ignored = nncf.IgnoredScope(names=kept)
        batches = length_sorted_batches([len(sentence) for sentence in ids], CALIBRATION_BATCH_SIZE)
        feeds = [self._feeds([ids[i] for i in batch]) for batch in batches]
        logger.info("calibrating %s on %d sentences (once; the result is cached)", precision, len(ids))
        # NNCF draws its own progress bars for a few seconds' work; errors still raise.
        with (
            host_logging_kept(quiet=("nncf",)),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            return nncf.quantize(
                model,
                nncf.Dataset(feeds),
                model_type=nncf.ModelType.TRANSFORMER,
                subset_size=len(feeds),
                ignored_scope=ignored,
                advanced_parameters=AdvancedQuantizationParameters(
                    smooth_quant_alphas=AdvancedSmoothQuantParameters(matmul=SMOOTH_QUANT_ALPHA)
                ),
            )

    def _feeds(self, batch_ids: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
        """The padded ``input_ids`` and ``attention_mask`` (batch, longest) the graph takes."""
        features = self.transformer.collate(batch_ids)
        return {name: features[name].numpy() for name in ("input_ids", "attention_mask")}

    def embed(
        self,
        ids: Sequence[Sequence[int]],
        batches: Sequence[np.ndarray],
        on_batch: Callable[[], object] = lambda: None,
    ) -> Tensor:
        """Pooled vectors (n, hidden), float32, in the order of ``ids``, from padded batches.

        Batches run concurrently, one per inference stream: each goes to the stream with the least
        work queued so far (padded tokens plus :data:`~sbert.base.batching.BATCH_COST_TOKENS` a batch),
        so that a few batches of unequal size do not leave one core idle; ``on_batch`` is called as
        each is queued. No Python callback runs on OpenVINO's threads: with
        ``AsyncInferQueue`` callbacks, releasing the queue could deadlock on the GIL.
        """
        work = ((self._feeds([ids[i] for i in batch]), batch) for batch in batches)
        requests = self.one_stream.for_call(self.requests, len(batches))  # a query: every core on it
        return self._run(requests, work, len(ids), on_batch)

    def embed_packed(
        self,
        ids: Sequence[Sequence[int]],
        passes: Sequence[Sequence[Sequence[int]]],
        on_pass: Callable[[], object] = lambda: None,
    ) -> Tensor:
        """Pooled vectors (n, hidden), float32, in the order of ``ids``, from packed rows.

        ``passes`` comes from :func:`~sbert.inference.packing.packed_passes`; they run as the
        batches of :meth:`embed` do. The packed graph is converted and compiled on the first call
        (a few seconds).

        Raises:
            ValueError: :attr:`can_pack` is false.
        """
        if not self.can_pack:
            raise ValueError(f"{self.precision} on {type(self.transformer.model).__name__} is not packed")
        work = ((pass_feeds(ids, rows), [i for row in rows for i in row]) for rows in passes)
        return self._run(self._packed_graph(), work, len(ids), on_pass)

    def _run(
        self,
        requests: list[Any],
        work: Iterable[tuple[dict[str, np.ndarray], _Rows]],
        count: int,
        on_each: Callable[[], object],
    ) -> Tensor:
        """Run each ``(feeds, sentence indices)`` on the request with the least work queued; the
        graph's output rows belong to those sentences, in that order. Feeds are built while the
        other streams compute."""
        out = np.empty((count, self.dim), dtype=np.float32)  # numpy, not torch: see packing's docstring
        running: list[_Rows | None] = [None] * len(requests)  # what each request computes
        loads = [0] * len(requests)  # tokens handed to each request so far
        masks: list[np.ndarray | None] = [None] * len(requests)  # a head's: each output's real tokens
        with _keep_signal_stack():
            for feeds, rows in work:
                slot = loads.index(min(loads))
                loads[slot] += BATCH_COST_TOKENS + feeds["input_ids"].size
                self._collect(requests[slot], running[slot], masks[slot], out)
                requests[slot].start_async(feeds)
                running[slot] = rows
                masks[slot] = feeds["token_mask"] if "token_mask" in feeds else feeds["attention_mask"]
                on_each()
            for request, last, mask in zip(requests, running, masks):
                self._collect(request, last, mask, out)
        return torch.from_numpy(out)

    def _collect(self, request: Any, rows: _Rows | None, mask: np.ndarray | None, out: np.ndarray) -> None:
        """A request's output into ``out``'s rows; a host-side head runs here, on the real tokens of
        the token vectors the graph gave (the other streams compute meanwhile)."""
        if rows is not None:
            request.wait()
            data = request.get_output_tensor(
                0
            ).data  # (sentences, hidden), or a head's (sentences, seq, hidden)
            if self.head is not None and mask is not None:
                data = self.head(torch.from_numpy(data.copy()), torch.from_numpy(mask)).numpy()
            out[rows] = data

    def packed_failure(self) -> str | None:
        """Why :meth:`embed_packed` cannot run here (``None``: it can). Compiles the packed graph
        and, given a ``reference``, probes it, on the first call."""
        if not self.can_pack:
            return f"{self.precision} on {type(self.transformer.model).__name__} is not packed"
        try:
            self._packed_graph()
        except UnfaithfulGraph as error:
            return str(error)
        return None

    def _packed_graph(self) -> list[Any]:
        if self._packed_failure is not None:
            raise UnfaithfulGraph(self._packed_failure)
        if self._packed_requests is None:
            module = PackedTransformer(self.transformer.model, self._graph_pooling)
            with _keep_signal_stack():
                example = pass_feeds(self._example_ids(), [[0, 1]])
                requests = self._compile(self._convert(module, example))
            # Tracing bumps the weights' version counters; the weights are those of self.weights.
            self.weights = WeightsStamp(self.transformer.model)
            if self._reference is not None:
                try:
                    self._prove(requests, packed=True)
                except UnfaithfulGraph as error:
                    self._packed_failure = str(error)
                    raise
            self._packed_requests = requests
        return self._packed_requests

    def _prove(self, requests: list[Any], packed: bool) -> None:
        """Raise :class:`~sbert.inference.probe.UnfaithfulGraph` unless the graph behind
        ``requests`` gives the reference's vectors on the probe batch (no reference: nothing to prove)."""
        if self._reference is None:
            return
        ids = self.transformer.tokenize(probe_texts()).ids
        rows = list(range(len(ids)))
        # Packed: the two short sentences share a row beside the long one's.
        feeds = pass_feeds(ids, [rows[:-1], rows[-1:]]) if packed else self._feeds(ids)
        got = self._run(requests, [(feeds, rows)], len(ids), lambda: None)
        graph = f"OpenVINO {'packed' if packed else 'padded'} graph"
        check_probe(self._reference(ids), got, self.precision, graph)
