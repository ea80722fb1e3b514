"""SentenceEncoder: text → tokens → token vectors → pooling → sentence vector.

The same network embeds every sentence (the siamese / triplet networks of the paper share this one
module), and at inference a sentence goes through alone to give its fixed-size vector.
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from sbert.batching import length_sorted_batches
from sbert.hub import DEFAULT_MODEL, resolve_model_path
from sbert.inference import FastBert
from sbert.inference.cpu import CpuCapabilities, this_cpu
from sbert.inference.fast_bert import parameter_version, supports
from sbert.inference.openvino_engine import OpenVinoEngine
from sbert.inference.packing import MAX_PASS_TOKENS, packable, packed_passes
from sbert.inference.plan import EnginePlan, make_plan
from sbert.inference.precision import check_backend, check_precision
from sbert.model_io import load_modules, save_modules
from sbert.modules import Pooling, Tokenized, Transformer
from sbert.modules.normalize import Normalize

logger = logging.getLogger("sbert")

# Inputs at least this long get a progress bar by default; shorter ones finish before it would help.
PROGRESS_BAR_MIN_SENTENCES = 1000


class SentenceEncoder(nn.Module):
    """A Hugging Face encoder followed by pooling and optional layers (Dense, Normalize).

    Args:
        transformer: The token-level encoder with its tokenizer.
        pooling: How token vectors become one sentence vector.
        layers: Modules applied to the pooled vector, in order.
        name: What the model was loaded from, for display.

    Attributes:
        source: The absolute, resolved path of the directory the model was loaded from
            (:meth:`from_pretrained`), which indexes and stores record; ``None`` for a model built
            in memory.

    Example:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained()          # bundled all-MiniLM-L6-v2
        >>> vectors = model.encode(["A man is playing a guitar.", "Someone plays an instrument."])
        >>> vectors.shape
        (2, 384)
    """

    def __init__(
        self,
        transformer: Transformer,
        pooling: Pooling | None = None,
        layers: Sequence[nn.Module] = (),
        name: str | None = None,
    ) -> None:
        if not isinstance(transformer, Transformer):
            hint = (
                f"; to load a model by name or path use SentenceEncoder.from_pretrained({transformer!r})"
                if isinstance(transformer, str | Path)
                else ""
            )
            raise TypeError(f"SentenceEncoder takes a Transformer, not {type(transformer).__name__}{hint}")
        super().__init__()
        self.transformer = transformer
        self.pooling = pooling or Pooling(transformer.dim)
        self.layers = nn.ModuleList(layers)
        self.name = name or "unnamed"
        self.source: str | None = None
        self.cpu_capabilities: CpuCapabilities = (
            this_cpu()
        )  # the plan is made for these; tests simulate others
        self._plans: dict[tuple[str, str, str, CpuCapabilities], EnginePlan] = {}
        self._openvino_failed: str | None = None  # why OpenVINO could not compile this model
        self.requested_precision = "auto"
        self.requested_backend = "auto"
        self.calibration_sentences: Sequence[str] | None = None  # mixed, int8; None: the bundled set
        self._fast: FastBert | None = None  # bf16 weights, rebuilt when the float32 weights change
        self._openvino: dict[str, OpenVinoEngine] = {}  # by precision, rebuilt like _fast

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path | None = None,
        pooling: str | None = None,
        max_seq_length: int | None = None,
        device: str | torch.device | None = None,
        precision: str = "auto",
        backend: str = "auto",
        calibration_sentences: Sequence[str] | None = None,
    ) -> SentenceEncoder:
        """Load a model by name or path.

        Args:
            name_or_path: ``None`` or ``"all-MiniLM-L6-v2"`` for the bundled model; a local Hugging Face
                or sentence-transformers directory; or a hub id ``org/name`` (needs internet).
            pooling: ``"mean"``, ``"cls"`` or ``"max"``; overrides the saved pooling. Plain Hugging Face
                models default to ``"mean"``.
            max_seq_length: Truncate inputs to this many tokens (default: the saved or model limit).
            device: ``"cpu"``, ``"cuda"``, ...; default CUDA when available, else CPU.
            precision: How ``encode()`` computes: ``"auto"`` (bf16 where the hardware has it
                natively, else float32; never calibrated, see :attr:`precision`), ``"float32"`` (exact), ``"bfloat16"``, ``"mixed"`` (int8 on
                the query, key and feed-forward input projections, bf16 elsewhere) or ``"int8"``
                (every projection; the last two are static quantization and need the openvino
                extra). ``forward()`` (training) is always float32.
            backend: ``"auto"`` (OpenVINO on CPU when the ``openvino`` extra is installed, else
                PyTorch), ``"torch"`` or ``"openvino"``.
            calibration_sentences: mixed and int8: sentences that fix the activation ranges once
                (default: a bundled set of 166 sentences of many genres). Use text like yours.

        Raises:
            ValueError: an unknown ``precision`` or ``backend`` (the message lists the choices).
        """
        check_precision(precision)
        check_backend(backend)
        path = resolve_model_path(name_or_path)
        from sbert.static.io import is_static  # a static model is a SentenceEncoder too

        if is_static(path):
            from sbert.static.encoder import StaticEncoder

            static = StaticEncoder.load(
                path, str(name_or_path), max_seq_length=max_seq_length, pooling=pooling
            )
            return static.to(device or "cpu")  # a table lookup gains nothing from a GPU
        transformer, pooler, layers = load_modules(path, pooling=pooling, max_seq_length=max_seq_length)
        model = cls(transformer, pooler, layers, name=str(name_or_path or DEFAULT_MODEL))
        model.source = str(path)
        model.eval()
        model.requested_precision = precision
        model.requested_backend = backend
        model.calibration_sentences = calibration_sentences
        return model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))

    def save(self, path: str | Path) -> None:
        """Save as a directory that sbert and sentence-transformers both load (safetensors only)."""
        save_modules(Path(path), self.transformer, self.pooling, list(self.layers))

    @property
    def dim(self) -> int:
        """Size of the sentence vectors."""
        dim = self.pooling.dim
        for layer in self.layers:
            dim = getattr(layer, "out_features", dim)
        return dim

    @property
    def max_seq_length(self) -> int:
        return self.transformer.max_seq_length

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def requested_precision(self) -> str:
        """The precision asked for (``auto``, ``float32``, ...); :attr:`precision` is what runs."""
        return self._requested_precision

    @requested_precision.setter
    def requested_precision(self, precision: str) -> None:
        self._requested_precision = check_precision(precision)

    @property
    def requested_backend(self) -> str:
        """The backend asked for (``auto``, ``torch``, ``openvino``); :attr:`backend` is what runs."""
        return self._requested_backend

    @requested_backend.setter
    def requested_backend(self, backend: str) -> None:
        self._requested_backend = check_backend(backend)

    def set_precision(self, precision: str | None = None, backend: str | None = None) -> EnginePlan:
        """Ask for another precision or backend; returns the plan that now runs.

        Example:
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
        return self._plan_for(self.requested_precision)

    @property
    def precision(self) -> str:
        """What ``encode()`` runs at here: ``"float32"``, ``"bfloat16"``, ``"mixed"`` or ``"int8"``.

        ``auto`` resolves to ``bfloat16`` where the device multiplies bf16 natively, else
        ``float32``; never to a calibrated precision, whose first use costs seconds. It depends only
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

    def _plan_for(self, precision: str) -> EnginePlan:
        key = (check_precision(precision), self.requested_backend, str(self.device), self.cpu_capabilities)
        plan = self._plans.get(key)
        if plan is None:
            plan = make_plan(
                precision,
                self.requested_backend,
                self.device,
                self.cpu_capabilities,
                lambda chosen: packable(self.transformer.model, chosen),
            )
            if plan.backend == "openvino" and plan.requested_backend == "auto" and self._openvino_failed:
                plan = plan.without_openvino(self._openvino_failed)
            self._plans[key] = plan
        return plan

    def tokenize(self, sentences: Sequence[str]) -> Tokenized:
        """Token ids of each sentence, unpadded and truncated to ``max_seq_length``."""
        try:
            return self.transformer.tokenize(sentences)
        except TypeError:
            # The Rust tokenizer rejects strings that are not valid UTF-8 (lone surrogates):
            # replace those characters rather than fail on text a user cannot easily see.
            return self.transformer.tokenize([_valid_utf8(s) for s in sentences])

    def token_counts(self, sentences: Sequence[str]) -> list[int]:
        """Tokens of each sentence before truncation, special tokens included (what ``encode`` would
        cut to ``max_seq_length``)."""
        try:
            return self.transformer.token_counts(sentences)
        except TypeError:  # lone surrogates, replaced as tokenize() replaces them
            return self.transformer.token_counts([_valid_utf8(s) for s in sentences])

    def forward(self, features: dict[str, Tensor], normalize: bool = True) -> Tensor:
        """Sentence vectors (batch, dim) of a padded batch from ``transformer.collate``.

        ``normalize=False`` skips a Normalize layer (the vectors keep their length; cosines do not change).
        """
        token_embeddings = self.transformer(features)  # (batch, seq, hidden)
        embeddings = self.pooling(token_embeddings, features["attention_mask"])  # (batch, hidden)
        return self._after_pooling(embeddings, normalize)

    def encode(
        self,
        sentences: str | Iterable[str],
        batch_size: int = 32,
        normalize: bool = False,
        convert_to_tensor: bool = False,
        show_progress_bar: bool | None = None,
        precision: str | None = None,
        max_tokens: int | None = None,
        batch_cost_tokens: int | None = None,
        pack: bool = False,
    ) -> np.ndarray | Tensor:
        """Embed sentences; the output keeps the input order.

        Sentences are sorted by token length and each batch is padded only to its longest member
        (smart batching), so a sentence's vector does not depend on the batch it lands in.

        Args:
            sentences: One string (returns shape ``(dim,)``) or a list of strings (``(n, dim)``).
            batch_size: Sentences per forward pass.
            normalize: Scale every vector to unit length.
            convert_to_tensor: Return a ``torch.Tensor`` instead of a numpy array.
            show_progress_bar: Default: on for inputs of 1000 sentences or more.
            precision: Overrides the model's precision for this call (see :meth:`from_pretrained`).
            max_tokens: A cap on padded tokens (sentences × longest) per batch, on top of
                ``batch_size``: batches of long texts shrink, bounding memory. ``None``: no cap.
            batch_cost_tokens: What one forward pass costs beyond its padded tokens, in tokens:
                batches are then cut to minimise padded tokens plus this per batch (helps many
                small calls of mixed lengths on a CPU, where 24 fits; ``sbert serve`` uses it).
                ``None``: batches of ``batch_size``.
            pack: Put several sentences in one row of a forward pass instead of padding each to
                the longest of its batch (:mod:`sbert.inference.packing`): the same vectors, faster
                for a few dozen sentences of mixed lengths (what a server merges). Runs for BERT
                models on OpenVINO in float32 or bf16; elsewhere padded batches run. With it,
                ``batch_size`` and ``batch_cost_tokens`` do not apply and ``max_tokens`` caps the
                tokens of a pass (default 8192).

        Raises:
            TypeError: ``sentences`` is neither a string nor an ordered collection of strings (a dict,
                a DataFrame, bytes, a set, ``None``...), an item is not a string (the message names
                its index and type), or ``batch_size`` or ``max_tokens`` is not a whole number.
            ValueError: an unknown ``precision``, or ``batch_size`` or ``max_tokens`` below 1.
        """
        # Every check before an engine is compiled or calibrated: bad input fails at once.
        _check_count("batch_size", batch_size)
        for name, value in (("max_tokens", max_tokens), ("batch_cost_tokens", batch_cost_tokens)):
            if value is not None:
                _check_count(name, value)
        plan = self._plan_for(self.requested_precision if precision is None else precision)
        single = isinstance(sentences, str)
        texts = as_texts(sentences)
        embeddings = torch.empty((len(texts), self.dim), dtype=torch.float32)
        if texts:
            engine = self._openvino_engine(plan.precision) if plan.backend == "openvino" else None
            if plan.backend == "openvino" and engine is None:  # conversion failed: the plan says so now
                plan = self._plan_for(plan.requested_precision)
            run_precision = plan.precision
            tokenized = self.tokenize(texts)
            if tokenized.truncated:
                logger.warning(
                    "%d of %d inputs were longer than max_seq_length=%d tokens and were truncated",
                    tokenized.truncated,
                    len(texts),
                    self.max_seq_length,
                )
            packed = pack and engine is not None and plan.packs
            batches = cast(  # index arrays, or packed passes (rows of indices)
                Sequence[Any],
                packed_passes(
                    tokenized.lengths, len(engine.requests), max_pass_tokens=max_tokens or MAX_PASS_TOKENS
                )
                if packed and engine is not None
                else length_sorted_batches(tokenized.lengths, batch_size, max_tokens, batch_cost_tokens),
            )
            if show_progress_bar is None:
                show_progress_bar = len(texts) >= PROGRESS_BAR_MIN_SENTENCES
            progress = tqdm(total=len(batches), desc="Encoding", unit="batch", disable=not show_progress_bar)
            was_training = self.training
            # eval() walks every module, a millisecond on each small call: the OpenVINO graph was
            # traced in eval mode, so only PyTorch needs it (a submodule may train on its own).
            toggle = engine is None or was_training
            if toggle:
                self.eval()
            try:
                if engine is not None:
                    embed = engine.embed_packed if packed else engine.embed
                    pooled = embed(tokenized.ids, batches, lambda: progress.update())
                    with torch.inference_mode():
                        embeddings = self._after_pooling(pooled.to(self.device)).float().cpu()
                else:
                    with torch.inference_mode():
                        forward = self._inference_forward(run_precision)
                        for batch in batches:
                            features = self.transformer.collate([tokenized.ids[i] for i in batch])
                            features = {key: value.to(self.device) for key, value in features.items()}
                            embeddings[torch.from_numpy(batch)] = forward(features).float().cpu()
                            progress.update()
            finally:
                progress.close()
                if toggle:
                    self.train(was_training)
        if normalize:
            embeddings = torch.nn.functional.normalize(embeddings, p=2, dim=1)
        result = embeddings[0] if single else embeddings
        return result if convert_to_tensor else result.numpy()

    def _inference_forward(self, precision: str) -> Callable[[dict[str, Tensor]], Tensor]:
        """The batch → sentence vectors function for ``precision``.

        bf16 on CPU runs FastBert (weights converted once; 1.7-2× faster than autocast on the measured
        CPU); other models and CUDA use autocast around the float32 module.
        """
        if precision == "float32":
            return self
        model = self.transformer.model
        if self.device.type == "cpu" and supports(model):
            if self._fast is None or self._fast.version != parameter_version(model):
                self._fast = FastBert(model, torch.bfloat16)
            return self._fast_forward
        return self._autocast_forward

    def _openvino_engine(self, precision: str) -> OpenVinoEngine | None:
        """The compiled engine for ``precision``, converted again whenever the weights have changed.

        ``None`` (with a one-line warning) when OpenVINO cannot convert this model and the backend
        was ``auto``: encode() then runs on PyTorch. Asked for explicitly, the error is raised.
        """
        engine = self._openvino.get(precision)
        calibration = self.calibration_sentences
        if (
            engine is None
            or engine.version != parameter_version(self.transformer.model)
            or engine.calibration is not calibration
            or engine.native_bf16 != self.cpu_capabilities.bf16
        ):
            try:
                engine = OpenVinoEngine(
                    self.transformer,
                    self.pooling,
                    precision,
                    calibration,
                    native_bf16=self.cpu_capabilities.bf16,
                )
            except ValueError:  # bad input (an empty calibration set): the caller's to fix
                raise
            except Exception as error:  # an architecture OpenVINO cannot convert
                if self.requested_backend == "openvino":
                    raise
                # Recorded in the plan: precision and backend then report what PyTorch runs.
                self._openvino_failed = (
                    f"OpenVINO could not compile {self.name} ({error}); PyTorch runs it instead"
                )
                logger.warning(self._openvino_failed)
                self._plans.clear()
                return None
            self._openvino[precision] = engine
        return engine

    def _fast_forward(self, features: dict[str, Tensor]) -> Tensor:
        assert self._fast is not None
        mask = features["attention_mask"]
        return self._after_pooling(self.pooling(self._fast(features["input_ids"], mask), mask))

    def _after_pooling(self, embeddings: Tensor, normalize: bool = True) -> Tensor:
        """The layers after pooling (Dense, Normalize), on (batch, hidden) vectors: every engine's
        pooled vectors go through this one function."""
        for layer in self.layers:
            if normalize or not isinstance(layer, Normalize):
                embeddings = layer(embeddings)
        return embeddings

    def _autocast_forward(self, features: dict[str, Tensor]) -> Tensor:
        with torch.autocast(self.device.type, dtype=torch.bfloat16):
            return self(features).float()


def as_texts(sentences: object) -> list[str]:
    """``sentences`` (one string, or an ordered collection of strings) as a list of strings.

    Raises:
        TypeError: for what iterates to something other than its texts: a dict or a DataFrame (keys
            or column names), bytes (integers), a set (no order to return vectors in); ``None`` or a
            number; or an item that is not a string.

    Example:
        >>> as_texts("one"), as_texts(("a", "b"))
        (['one'], ['a', 'b'])
    """
    if isinstance(sentences, str):
        return [sentences]
    kind = "None" if sentences is None else type(sentences).__name__
    if isinstance(sentences, bytes | bytearray | memoryview):
        raise TypeError(f"sentences is {kind}: decode it to str first, e.g. data.decode('utf-8')")
    if isinstance(sentences, Mapping) or hasattr(sentences, "columns"):
        raise TypeError(
            f"sentences is a {kind}, which iterates over its keys or column names: pass a list of "
            "strings, e.g. list(d.values()) or df['text'].tolist()"
        )
    if isinstance(sentences, set | frozenset):  # dict keys, also a Set, keep their order
        raise TypeError(f"sentences is a {kind}, which has no order to return vectors in: pass a list")
    if not isinstance(sentences, Iterable):
        raise TypeError(f"sentences is {kind}, expected a string or a list of strings")
    texts = list(sentences)
    check_texts(texts)
    return texts


def _check_count(name: str, value: object) -> None:
    """``TypeError`` unless ``value`` is a whole number (not a bool), ``ValueError`` if below 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


def check_texts(texts: Sequence[object]) -> None:
    """Raise ``TypeError`` naming the first item that is not a string."""
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"sentences[{index}] is {type(text).__name__}, expected str")


def _valid_utf8(text: str) -> str:
    return text.encode("utf-8", errors="replace").decode("utf-8")
