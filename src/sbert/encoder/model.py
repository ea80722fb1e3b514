"""SentenceEncoder: text → tokens → token vectors → pooling → sentence vector.

The same network embeds every sentence (the siamese / triplet networks of the paper share this one
module), and at inference a sentence goes through alone to give its fixed-size vector.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from sbert.base.inputs import check_max_seq_length
from sbert.base.modes import in_eval_mode
from sbert.encoder.format import read_model
from sbert.encoder.output import EncodeOutput, encoded
from sbert.encoder.st_surface import SentenceTransformerMethods
from sbert.inference.plan import PlanRequest
from sbert.inference.planning import Planned, Planning
from sbert.inference.runner import RunOptions
from sbert.inference.runners import after_pooling
from sbert.inference.steps import prompt_length, run_options
from sbert.model.base import ModelBase, PlannedAttributes
from sbert.model.by_name import LoadsByName
from sbert.model.encoding import EncodeRequest, tokenized
from sbert.model.folder import saved_similarity_fn_name, write_model
from sbert.model.hub import DEFAULT_MODEL, resolve_model_path
from sbert.model.prompts import PromptMethods, Prompts
from sbert.model.router import RouteMethods, routed
from sbert.modules import Pooling, Router, StaticEmbedding, Tokenized, Transformer

InputModule = Transformer | StaticEmbedding  # token ids → token vectors, or (static) sentence vectors


class SentenceEncoder(
    SentenceTransformerMethods,
    PromptMethods,
    RouteMethods,
    PlannedAttributes,
    ModelBase,
    metaclass=LoadsByName,
):
    """An input module, pooling and optional layers (Dense, Normalize), as sentence-transformers'
    ``modules.json`` lists them.

    ``sbert.SentenceTransformer`` is this class: built from a name or path (``SentenceEncoder(
    "all-MiniLM-L6-v2", device="cpu")``, sentence-transformers' constructor) it loads as
    :meth:`from_pretrained` does, and it has sentence-transformers' methods
    (:class:`~sbert.encoder.st_surface.SentenceTransformerMethods`; ``encode_query`` and ``encode_document``:
    :class:`~sbert.model.prompts.PromptMethods`).

    Args:
        transformer: The input module: a :class:`~sbert.modules.Transformer` (a Hugging Face
            encoder, decoder or T5 encoder with its tokenizer), or a
            :class:`~sbert.modules.StaticEmbedding` token table (a static model, which pools by
            itself and always runs float32 on PyTorch); or a :class:`~sbert.modules.Router`, a
            stack per task (:class:`~sbert.model.router.RouteMethods`).
        pooling: How token vectors become one sentence vector.
        layers: Modules applied to the pooled vector, in order (after a Router: after every route).
        name: What the model was loaded from, for display.

    Attributes:
        source: The absolute, resolved path of the directory the model was loaded from
            (:meth:`from_pretrained`), which indexes and stores record; ``None`` for a model built
            in memory.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained()          # bundled all-MiniLM-L6-v2
        >>> vectors = model.encode(["A man is playing a guitar.", "Someone plays an instrument."])
        >>> vectors.shape
        (2, 384)
    """

    input_module: InputModule

    def __init__(
        self,
        transformer: InputModule | Router,
        pooling: Pooling | None = None,
        layers: Sequence[nn.Module] = (),
        name: str | None = None,
        prompts: Prompts | None = None,
    ) -> None:
        router, after = (transformer, layers) if isinstance(transformer, Router) else (None, ())
        if router is not None:  # this model runs its own route's stack, and holds the others
            transformer, pooling, layers = router.stack(router.own_route, after)
        if not isinstance(transformer, Transformer | StaticEmbedding):
            hint = (
                f"; to load a model by name or path use SentenceEncoder.from_pretrained({transformer!r})"
                if isinstance(transformer, str | Path)
                else ""
            )
            raise TypeError(
                "SentenceEncoder takes a Transformer, a StaticEmbedding or a model name or path, "
                f"not {type(transformer).__name__}{hint}"
            )
        super().__init__()
        self.input_module = transformer
        self.pooling = pooling or Pooling(transformer.dim)
        self.layers = nn.ModuleList(layers)
        # What encode() runs (precision, backend, plan, runners) is this object's; the encoder calls it.
        self.planning = Planning(self.input_module, self.pooling, self.layers, name or "unnamed")
        self.prompts = prompts or Prompts()  # sentence-transformers' prompts and default prompt
        self.source: str | None = None
        self.truncate_dim: int | None = None  # encode()'s default truncate_dim (sentence-transformers')
        if router is not None:
            self._set_routes(router, after)

    # The planning's attributes under the encoder's names (PlannedAttributes: the shared ones).
    is_static = Planned[bool]()
    """Whether the input module is a static token table (:class:`~sbert.modules.StaticEmbedding`)."""

    def encode_token_ids(self, ids: Sequence[Sequence[int]], options: RunOptions | None = None) -> Tensor:
        """Vectors (n, dim) of inputs already tokenized, by the runner ``encode()`` runs text on."""
        return self.planning.encode_token_ids(ids, options)

    @property
    def transformer(self) -> Transformer:
        """The input module of a transformer model (a static model has none: ``AttributeError``)."""
        if not isinstance(self.input_module, Transformer):
            raise AttributeError(f"{self.name} is a static model: it has a token table, not a transformer")
        return self.input_module

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
            pooling: A mode of :data:`sbert.base.options.POOLING_MODES` (``"mean"``, ``"cls"``, ``"max"``,
                ``"lasttoken"``...); overrides the saved pooling. Plain Hugging Face models default
                to ``"mean"``. A saved model's prompts (``config_sentence_transformers.json``) are
                read into :attr:`prompts`.
            max_seq_length: Truncate inputs to this many tokens (default: the saved or model limit).
            device: ``"cpu"``, ``"cuda"``, ...; default CUDA when available, else CPU.
            precision: The *compute* precision, how ``encode()`` computes (not sentence-transformers'
                output precision, ``encode(precision=...)``): ``"auto"`` (bf16 where the CPU has it
                natively, float16 on a CUDA GPU with tensor cores, else float32; never calibrated, see
                :attr:`precision`), ``"float32"`` (exact), ``"bfloat16"``, ``"mixed"`` (int8 on
                the query, key and feed-forward input projections, bf16 elsewhere) or ``"int8"``
                (every projection; the last two are static quantization and need the openvino
                extra). ``forward()`` (training) is always float32.
            backend: ``"auto"`` (OpenVINO on CPU when the ``openvino`` extra is installed, else
                PyTorch), ``"torch"`` or ``"openvino"``.
            calibration_sentences: mixed and int8: sentences that fix the activation ranges once
                (default: a bundled set of 166 sentences of many genres). Use text like yours.

        Raises:
            ValueError: an unknown ``precision`` or ``backend`` (the message lists the choices).
            MaxSeqLengthError: a ``max_seq_length`` that is not a whole number of at least 1, or is
                more than the model's positions (also a ``ModelLoadError`` and a ``ValueError``).
        """
        request = PlanRequest.of(precision, backend)  # parsed here, once
        name = str(name_or_path or DEFAULT_MODEL)
        check_max_seq_length(max_seq_length, None, name)  # before a download; the folder's limit: load()
        path = resolve_model_path(name_or_path)
        parts = read_model(path, pooling=pooling, max_seq_length=max_seq_length)
        model = cls(parts.input_module, parts.pooling, parts.layers, name, parts.prompts)
        model.source = str(path)
        model.similarity_fn_name = saved_similarity_fn_name(path)
        transformers = [stack for stack in model.stacks() if not stack.is_static]
        for stack in transformers:  # a table lookup gains nothing from a GPU, bf16 or OpenVINO
            stack.requested_precision = request.precision
            stack.requested_backend = request.backend
            stack.calibration_sentences = calibration_sentences
        return model.placed(device or (None if transformers else "cpu"))

    def _write(self, path: Path) -> None:
        write_model(path, self.saved_modules(), self.prompts)
        self.save_similarity_fn_name(path)

    @property
    def dim(self) -> int:
        """Size of the sentence vectors."""
        dim = self.pooling.output_dim
        for layer in self.layers:
            dim = getattr(layer, "out_features", dim)
        return dim

    def token_ids(self, sentences: Sequence[str]) -> Tokenized:
        """Token ids of each sentence, unpadded and truncated to ``max_seq_length``."""
        return self.planning.token_ids(sentences)

    def token_counts(
        self, sentences: Sequence[str], prompt_name: str | None = None, prompt: str | None = None
    ) -> list[int]:
        """Tokens of each sentence before truncation, special tokens and the prompt included (what
        ``encode`` with the same prompt would cut to ``max_seq_length``)."""
        sentences, _ = self.with_prompt(sentences, prompt_name, prompt)
        return tokenized(self.input_module.token_counts, sentences)

    def forward(self, features: dict[str, Tensor], normalize: bool = True) -> Tensor:
        """Sentence vectors (batch, dim) of a batch from :meth:`collate`.

        ``normalize=False`` skips a Normalize layer (the vectors keep their length; cosines do not change).
        """
        if isinstance(self.input_module, StaticEmbedding):
            embeddings = self.input_module(features)  # (batch, dim): it pools by itself
        else:
            token_embeddings = self.input_module(features)  # (batch, seq, hidden)
            embeddings = self.pooling(token_embeddings, features["attention_mask"], prompt_length(features))
        return self.after_pooling(embeddings, normalize)  # (batch, dim)

    @in_eval_mode  # dropout off, the caller's mode restored (sbert.base.modes)
    @routed  # task=: a Router model's route of that name runs (sbert.model.router)
    def encode(
        self,
        sentences: str | Iterable[str],
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        output_value: str = "sentence_embedding",
        precision: str | None = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: str | torch.device | list[str] | None = None,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        pool: Any = None,
        chunk_size: int | None = None,
        *,
        normalize: bool = False,
        compute_precision: str | None = None,
        max_tokens: int | None = None,
        batch_cost_tokens: int | None = None,
        pack: bool = False,
        task: str | None = None,
    ) -> Any:
        """Embed sentences in input order: sentence-transformers' ``encode`` arguments, then sbert's by keyword.

        Args:
            sentences: One string (shape ``(dim,)`` out) or a list of strings (``(n, dim)``).
            prompt_name: The model's prompt of that name before each sentence (default: its default one).
            prompt: This text before each sentence (instead of any named prompt).
            batch_size: Sentences per forward pass.
            show_progress_bar: Default: on for 1000 sentences or more.
            output_value: ``"sentence_embedding"``, or ``"token_embeddings"`` (float32, on PyTorch).
            precision: The *output* precision: ``"float32"``, ``"int8"``/``"uint8"``, ``"binary"``/``"ubinary"``.
            convert_to_numpy: A numpy array; ``False``: a list of 1-d tensors.
            convert_to_tensor: One ``torch.Tensor`` (wins over ``convert_to_numpy``).
            device: Move the model to this device first (one device: sbert has no process pool).
            normalize_embeddings: Scale every vector to unit length (after ``truncate_dim``).
            truncate_dim: Keep the first this many dimensions (default: :attr:`truncate_dim`).
            pool: sentence-transformers' multi-process pool: not available, must be ``None``.
            chunk_size: The chunk of a multi-process pool; nothing to do in one process.
            normalize: sbert's name for ``normalize_embeddings``.
            compute_precision: How the network computes (default :attr:`requested_precision`; :meth:`from_pretrained`).
            max_tokens: A cap on padded tokens per batch (:class:`~sbert.inference.runner.RunOptions`).
            batch_cost_tokens: A pass's cost in tokens, for cutting batches (``RunOptions``).
            pack: Several sentences to a row where the plan packs (``RunOptions``).
            task: A Router model's route to run (:class:`~sbert.model.router.RouteMethods`).

        Raises:
            TypeError: an argument of the wrong type (the message names it, and an item by its index).
            ValueError: a value out of range, an unknown name or precision, a ``pool`` (what it takes, said).
        """
        options = run_options(batch_size, max_tokens, batch_cost_tokens, pack)  # checks before any engine
        output = EncodeOutput.of(self, output_value, precision, normalize or normalize_embeddings,
                                 truncate_dim, convert_to_numpy, convert_to_tensor)  # fmt: skip
        request = EncodeRequest.of(self, sentences, prompt_name, prompt, batch_size, show_progress_bar,
                                   device, pool, bar_by_default=not self.is_static)  # fmt: skip
        return encoded(self, request, output, compute_precision, options)

    def after_pooling(self, embeddings: Tensor, normalize: bool = True) -> Tensor:
        """The layers after pooling (Dense, Normalize), on (batch, hidden) vectors: every runner's
        pooled vectors go through this one function."""
        return after_pooling(self.layers, embeddings, normalize)


# sentence-transformers' name: the same class (its constructor and methods are SentenceEncoder's).
SentenceTransformer = SentenceEncoder
