"""The :class:`CrossEncoder` class: loading, scoring (sbert's and sentence-transformers' names), saving."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from sbert._version import __version__
from sbert.base.batching import length_sorted_batches
from sbert.base.files import replace_dir, staging_dir
from sbert.base.inputs import check_max_seq_length
from sbert.base.modes import in_eval_mode
from sbert.base.options import PROGRESS_BAR_MIN_SENTENCES
from sbert.cross_encoder.engine import EngineParts, TokenizedPairs, engine_parts, pair_ids, tokenize_pairs
from sbert.cross_encoder.loading import (
    Activation,
    check_st_options,
    constructor_error,
    load_folder,
    save_folder,
    sbert_default_activation,
    st_default_activation,
)
from sbert.cross_encoder.ranking import RankMethods
from sbert.cross_encoder.scores import activated, as_pairs, converted
from sbert.inference.plan import EnginePlan
from sbert.inference.planning import Planning
from sbert.inference.runner import Runner, RunOptions
from sbert.inference.runners import Runners
from sbert.model.base import ModelBase, PlannedAttributes, default_device
from sbert.model.hub import DEFAULT_MODEL, resolve_model_path
from sbert.modules.transformer import default_max_seq_length

logger = logging.getLogger("sbert")

_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
PAIR_LEAST = 3  # the shortest max_seq_length a pair fits in: [CLS] and two [SEP]


class _Engine:
    """The runners' parts of a BERT classifier (:mod:`sbert.cross_encoder.engine`), kept off the
    module tree: they share the classifier's weights, which must not be saved or moved twice."""

    def __init__(self, parts: EngineParts) -> None:
        self.parts = parts


class CrossEncoder(RankMethods, PlannedAttributes, ModelBase):
    """One transformer reading a sentence pair, with a regression or classification head.

    Built as sentence-transformers' ``CrossEncoder`` is, from a name or path, or from a loaded
    Hugging Face model and its tokenizer (sbert's older form).

    Args:
        model_name_or_path: A local folder (sentence-transformers' CrossEncoder format, sbert's, or a
            plain Hugging Face sequence-classification folder), a hub id ``org/name`` (needs
            internet), or a loaded ``AutoModelForSequenceClassification``.
        tokenizer: With a loaded model: its fast tokenizer.
        max_seq_length: Pairs longer than this many tokens (both sentences and special tokens) are
            cut, the longer sentence first (default: saved, else the model's limit).
        name: What the model was loaded from, for display.
        num_labels: Outputs of the head: 1 for regression, k for classification (default: saved,
            else 1). A different number than saved starts a new, untrained head.
        max_length: sentence-transformers' name of ``max_seq_length``.
        activation_fn: Applied to the logits by :meth:`predict` (default: the saved one, else
            sentence-transformers' default: a sigmoid for one label, the logits for k).
        device: ``"cpu"``, ``"cuda"``, ...; default CUDA when available, else CPU.
        label_names: Names of the k classes (default ``LABEL_0``, ...).
        precision: The compute precision, as for ``SentenceEncoder.from_pretrained``: ``"auto"``
            (bf16 where the CPU has it natively, float16 on a CUDA GPU with tensor cores, else
            float32), ``"float32"`` (exact), ...
        backend: ``"auto"`` (OpenVINO on the CPU when installed), ``"torch"`` or ``"openvino"``.

    Examples:
        >>> from sbert import CrossEncoder
        >>> model = CrossEncoder.from_pretrained(num_labels=1)   # bundled weights, untrained head
        >>> model.predict([("A man plays guitar.", "Someone makes music.")]).shape
        (1,)
    """

    def __init__(
        self,
        model_name_or_path: str | Path | PreTrainedModel | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        max_seq_length: int | None = None,
        name: str | None = None,
        *,
        num_labels: int | None = None,
        max_length: int | None = None,
        activation_fn: Activation | None = None,
        device: str | torch.device | None = None,
        label_names: Sequence[str] | None = None,
        precision: str = "auto",
        backend: str = "auto",
        **st_options: Any,
    ) -> None:
        super().__init__()
        check_st_options(st_options, backend)
        for value in (max_length, max_seq_length):  # before a folder is read; its own value below
            check_max_seq_length(value, None, name or str(model_name_or_path), least=PAIR_LEAST)
        max_seq_length = max_seq_length if max_length is None else max_length
        saved_activation = None
        if isinstance(model_name_or_path, str | Path):
            path = resolve_model_path(model_name_or_path)
            loaded = load_folder(path, num_labels, label_names)
            model, tokenizer = loaded.model, loaded.tokenizer
            check_max_seq_length(loaded.max_seq_length, None, str(path), least=PAIR_LEAST)
            max_seq_length = loaded.max_seq_length if max_seq_length is None else max_seq_length
            saved_activation, name = loaded.activation, name or str(model_name_or_path)
        elif not isinstance(model_name_or_path, PreTrainedModel) or tokenizer is None:
            raise TypeError(constructor_error(model_name_or_path))
        else:
            model = model_name_or_path
        if max_seq_length is None:
            max_seq_length = default_max_seq_length(model, tokenizer)
        self.model = model
        self._tokenizer = tokenizer
        parts = engine_parts(model, tokenizer, max_seq_length)
        # What the engines run (a BERT classifier's; others run PyTorch float32): the head stands in
        # for Pooling, called on token vectors and mask, with an output_dim.
        self.planning = Planning(
            parts.transformer if parts else None,  # type: ignore[arg-type]
            parts.head if parts else None,  # type: ignore[arg-type]
            [],
            name or "unnamed",
        )
        self._accepts_token_types = "token_type_ids" in tokenizer.model_input_names
        self.activation_fn: Activation = (
            activation_fn or saved_activation or st_default_activation(self.num_labels)
        )
        self._activation_chosen = activation_fn is not None or saved_activation is not None
        self._max_seq_length = 0
        self._engine = _Engine(parts) if parts is not None else None
        self.max_seq_length = max_seq_length
        self.requested_precision, self.requested_backend = precision, backend
        self.eval()
        if isinstance(model_name_or_path, str | Path) or device is not None:
            self.to(default_device(device))

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path | None = None,
        num_labels: int | None = None,
        label_names: Sequence[str] | None = None,
        max_seq_length: int | None = None,
        device: str | torch.device | None = None,
        precision: str = "auto",
        backend: str = "auto",
    ) -> CrossEncoder:
        """Load a cross-encoder, or start one from an encoder's weights with a new head.

        As the constructor, but ``None`` is the bundled all-MiniLM-L6-v2, and a model saved without
        an activation scores k labels as probabilities (a softmax), as sbert always has.

        A new head is initialised from torch's random generator: call ``torch.manual_seed`` first
        for a reproducible start.
        """
        model = cls(
            resolve_model_path(name_or_path),
            max_seq_length=max_seq_length,
            name=str(name_or_path or DEFAULT_MODEL),
            num_labels=num_labels,
            label_names=label_names,
            device=device,
            precision=precision,
            backend=backend,
        )
        if not model._activation_chosen:
            model.activation_fn = sbert_default_activation(model.num_labels)
        return model

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "activation_fn":  # a plain attribute, not a submodule: it has no weights to save
            object.__setattr__(self, name, value)
            return
        super().__setattr__(name, value)

    least_seq_length = PAIR_LEAST

    @property
    def input_module(self) -> Any:
        """The runners' input module (:class:`~sbert.cross_encoder.engine.PairTransformer`)."""
        return self._engine.parts.transformer if self._engine else None

    @property
    def pooling(self) -> Any:
        """The classifier head in pooling's place (:class:`~sbert.cross_encoder.engine.PairHead`)."""
        return self._engine.parts.head if self._engine else None

    @property
    def runners(self) -> Runners:  # type: ignore[override]  # read-only here: a BERT classifier's only
        assert self._engine is not None, "only a BERT classifier runs on the engines"
        return self.planning.runners

    @property
    def layers(self) -> Any:
        return []

    @property
    def is_static(self) -> bool:
        return False

    def _runner(self, plan: EnginePlan, pack: bool) -> tuple[EnginePlan, Runner]:
        return self.planning.runner(plan, pack)

    def _set_max_seq_length(self, value: int) -> None:
        self._max_seq_length = value
        if self._engine is not None:
            self._engine.parts.transformer.max_seq_length = value

    # Pairs are cut to this many tokens (ModelBase's setter, at least a pair's 3 special tokens).
    max_seq_length = property(lambda self: self._max_seq_length, ModelBase.max_seq_length.fset)  # type: ignore[attr-defined]
    max_length = max_seq_length

    @property
    def num_labels(self) -> int:
        return int(self.model.config.num_labels or 1)

    @property
    def config(self) -> Any:
        """The Hugging Face model's config."""
        return self.model.config

    @property
    def label_names(self) -> list[str]:
        id2label: dict = self.model.config.id2label or {}
        return [str(id2label.get(i, f"LABEL_{i}")) for i in range(self.num_labels)]

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        """The Hugging Face tokenizer that reads the pairs."""
        return self._tokenizer

    def tokenize(self, pairs: Sequence[tuple[str, str]]) -> TokenizedPairs:
        """Token ids of ``[CLS] A [SEP] B [SEP]`` per pair, unpadded, cut to ``max_seq_length``."""
        return tokenize_pairs(self.tokenizer, as_pairs(list(pairs))[0], self.max_seq_length)

    def pad(self, ids: Sequence[Sequence[int]], token_types: Sequence[Sequence[int]]) -> dict[str, Tensor]:
        """Pad a batch to its longest pair: ``input_ids``, ``attention_mask``, ``token_type_ids`` (batch, seq)."""
        longest = max(len(row) for row in ids)
        pad_id = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(ids), longest), pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(ids), longest), dtype=torch.long)
        type_ids = torch.zeros((len(ids), longest), dtype=torch.long)
        for row, (tokens, types) in enumerate(zip(ids, token_types)):
            input_ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            attention_mask[row, : len(tokens)] = 1
            type_ids[row, : len(types)] = torch.tensor(types, dtype=torch.long)
        features = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self._accepts_token_types:
            features["token_type_ids"] = type_ids
        return features

    def collate(self, pairs: Sequence[tuple[str, str]]) -> dict[str, Tensor]:  # type: ignore[override]  # pairs, not token ids
        """Tokenize and pad a batch of pairs: the features :meth:`forward` takes (for training, too)."""
        tokenized = self.tokenize(pairs)
        return self.pad(tokenized.ids, tokenized.token_types)

    def forward(self, features: dict[str, Tensor]) -> Tensor:
        """Logits (batch, num_labels) of a padded batch, PyTorch float32; gradients flow when in
        training mode."""
        inputs = {key: value.to(self.device) for key, value in features.items() if key in _MODEL_INPUTS}
        return self.model(**inputs, return_dict=True).logits

    @in_eval_mode  # dropout off, the caller's mode restored (sbert.base.modes)
    def logits(
        self,
        pairs: Sequence[tuple[str, str]],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        pack: bool = False,
    ) -> Tensor:
        """Raw scores (n, num_labels), float32 on the CPU, in input order, computed as :attr:`plan`
        says (the bi-encoder's runners: on CUDA its GPU pipeline); a classifier the runners do not
        split (:func:`~sbert.cross_encoder.engine.engine_parts`) runs as one PyTorch module in float32.

        Pairs are sorted by token length and padded per batch (or packed into rows where
        ``pack=True`` and the plan packs), as in ``SentenceEncoder.encode``.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        pairs = as_pairs(list(pairs))[0]
        if not pairs:
            return torch.empty((0, self.num_labels), dtype=torch.float32)
        tokenized = self.tokenize(pairs)
        if show_progress_bar is None:
            show_progress_bar = len(pairs) >= PROGRESS_BAR_MIN_SENTENCES
        bar = tqdm(total=len(pairs), desc="Scoring pairs", unit="pair", disable=not show_progress_bar)
        try:
            return self.tokens_logits(tokenized, RunOptions(batch_size=batch_size, pack=pack), bar.update)
        finally:
            bar.close()

    @in_eval_mode
    def tokens_logits(
        self, tokenized: TokenizedPairs, options: RunOptions, progress: Any = lambda done: None
    ) -> Tensor:
        """Raw scores (n, num_labels) of pairs already tokenized (as :meth:`tokenize` cuts them), by
        the runner :meth:`logits` runs on, batched as ``options`` says (batch size, padded tokens,
        cost of a pass, packing): the step after tokenizing, which ``sbert serve`` runs once for
        the pairs of several merged /rerank requests."""
        if self._engine is not None:
            _, runner = self._runner(self.plan, options.pack)
            ids = pair_ids(tokenized, self._engine.parts.transformer.vocab_size)
            return runner.run(ids, options, progress)
        return self._torch_logits(tokenized, options.batch_size, progress)

    def _torch_logits(self, tokenized: TokenizedPairs, batch_size: int, progress: Any) -> Tensor:
        """The whole Hugging Face model in float32, on padded length-sorted batches (in eval mode:
        :meth:`logits`, its one caller, runs under ``@in_eval_mode``)."""
        logits = torch.empty((len(tokenized.ids), self.num_labels), dtype=torch.float32)
        with torch.inference_mode():
            for batch in length_sorted_batches(tokenized.lengths, batch_size):
                features = self.pad(
                    [tokenized.ids[i] for i in batch], [tokenized.token_types[i] for i in batch]
                )
                logits[torch.from_numpy(batch)] = self(features).float().cpu()
                progress(len(batch))
        return logits

    def predict(
        self,
        inputs: Sequence[tuple[str, str]] | tuple[str, str],
        batch_size: int = 32,
        apply_activation: bool = True,
        show_progress_bar: bool | None = None,
        *,
        activation_fn: Activation | None = None,
        apply_softmax: bool | None = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
    ) -> Any:
        """Score pairs, as sentence-transformers' ``CrossEncoder.predict``; the output keeps the input order.

        Args:
            inputs: ``(sentence_a, sentence_b)`` pairs, or one pair.
            batch_size: Pairs per forward pass.
            apply_activation: ``False`` gives the raw logits (sbert's older switch).
            show_progress_bar: Default: on for 1000 pairs or more.
            activation_fn: Instead of :attr:`activation_fn` for this call.
            apply_softmax: With k labels, a softmax over them after the activation.
            convert_to_numpy: A numpy array (default); ``False`` gives a list of tensors.
            convert_to_tensor: One tensor on the model's device (overrides ``convert_to_numpy``).

        Returns:
            (n,) for one label, (n, num_labels) otherwise; for one pair, its score (or k scores).

        Examples:
            >>> from sbert import CrossEncoder
            >>> model = CrossEncoder.from_pretrained(num_labels=1)
            >>> float(model.predict(("A man plays guitar.", "Someone makes music."))) < 1
            True
        """
        pairs, single = as_pairs(inputs)
        logits = self.logits(pairs, batch_size, show_progress_bar)
        activation = (activation_fn or self.activation_fn) if apply_activation else None
        scores = activated(logits, activation, apply_softmax).float()
        return converted(scores, single, convert_to_numpy, convert_to_tensor, self.device)

    def _write(self, path: Path) -> None:
        """A Hugging Face directory (safetensors) plus ``sbert_cross_encoder.json``, atomically;
        sentence-transformers' ``CrossEncoder`` loads it with the same activation and length limit."""
        staging = staging_dir(path)
        try:
            settings = {
                "sbert_version": __version__,
                "head": "regression" if self.num_labels == 1 else "classification",
                "num_labels": self.num_labels,
                "label_names": self.label_names,
                "max_seq_length": self.max_seq_length,
            }
            save_folder(staging, self.model, self.tokenizer, self.activation_fn, settings)
            replace_dir(staging, path)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
