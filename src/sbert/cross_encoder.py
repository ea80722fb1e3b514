"""CrossEncoder: both sentences through one BERT together, ``[CLS] A [SEP] B [SEP]`` → a score or a label.

The paper's BERT baseline: full attention across the two sentences makes it accurate, but every
pair needs its own forward pass, so comparing n sentences costs n·(n−1)/2 passes where a bi-encoder
(:class:`~sbert.SentenceEncoder`) needs n. Use it to rerank the few candidates that a bi-encoder
retrieved.

The model is a Hugging Face ``AutoModelForSequenceClassification``: the encoder, BERT's pooler on
``[CLS]`` and a linear head of ``num_labels`` outputs. Taking that class rather than an own head on
``AutoModel`` keeps the saved directory a plain Hugging Face checkpoint, which sentence-transformers'
``CrossEncoder`` and ``transformers`` load as they are.

Outputs:
- regression (``num_labels=1``): one logit per pair; :meth:`CrossEncoder.predict` applies a sigmoid,
  giving a score in [0, 1]. The paper's BERT-STSb baseline regresses the gold score scaled to 0-1, so
  a trainer fits ``sigmoid(logit)`` to ``score / 5`` (e.g. binary cross-entropy on the logit).
- classification (``num_labels=k``): k logits; ``predict`` applies a softmax, giving probabilities
  in the order of ``label_names``.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn
from tqdm.auto import tqdm
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from sbert import __version__
from sbert.batching import length_sorted_batches
from sbert.encoder import PROGRESS_BAR_MIN_SENTENCES
from sbert.errors import ModelLoadError
from sbert.files import replace_dir, staging_dir
from sbert.hub import DEFAULT_MODEL, resolve_model_path
from sbert.model_io import read_json
from sbert.modules.transformer import default_max_seq_length, load_fast_tokenizer, quiet_transformers

logger = logging.getLogger("sbert")

CONFIG_FILE = "sbert_cross_encoder.json"
_ACTIVATIONS = {1: "torch.nn.modules.activation.Sigmoid"}  # sentence-transformers' CrossEncoder reads this
_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass
class TokenizedPairs:
    """Token ids and segment ids (0 for A, 1 for B) of each pair, unpadded; how many were truncated."""

    ids: list[list[int]]
    token_types: list[list[int]]
    truncated: int

    @property
    def lengths(self) -> list[int]:
        return [len(ids) for ids in self.ids]


class Ranked(NamedTuple):
    """A reranked candidate: its position in the list given, the score, and the text."""

    corpus_id: int
    score: float
    text: str


class CrossEncoder(nn.Module):
    """One transformer reading a sentence pair, with a regression or classification head.

    Args:
        model: A Hugging Face sequence-classification model.
        tokenizer: Its fast tokenizer.
        max_seq_length: Pairs longer than this many tokens (both sentences and special tokens) are cut,
            the longer sentence first.
        name: What the model was loaded from, for display.

    Examples:
        >>> from sbert.cross_encoder import CrossEncoder
        >>> model = CrossEncoder.from_pretrained(num_labels=1)   # bundled weights, untrained head
        >>> model.predict([("A man plays guitar.", "Someone makes music.")]).shape
        (1,)
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        max_seq_length: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length or default_max_seq_length(model, tokenizer)
        self.name = name or "unnamed"
        self._accepts_token_types = "token_type_ids" in tokenizer.model_input_names

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path | None = None,
        num_labels: int | None = None,
        label_names: Sequence[str] | None = None,
        max_seq_length: int | None = None,
        device: str | torch.device | None = None,
    ) -> CrossEncoder:
        """Load a cross-encoder, or start one from an encoder's weights with a new head.

        Args:
            name_or_path: As for ``SentenceEncoder.from_pretrained``: ``None`` (the bundled
                all-MiniLM-L6-v2), a local Hugging Face or sentence-transformers directory, or a hub id.
            num_labels: Outputs of the head: 1 for regression, k for classification. Default: the saved
                number, or 1. A different number than saved starts a new, untrained head.
            label_names: Names of the k classes (default ``LABEL_0``, ...).
            max_seq_length: Cut pairs to this many tokens (default: saved, else the model's limit).
            device: Default CUDA when available, else CPU.

        A new head is initialised from torch's random generator: call ``torch.manual_seed`` first
        for a reproducible start.
        """
        path = _transformer_folder(resolve_model_path(name_or_path))
        settings = read_json(path / CONFIG_FILE) if (path / CONFIG_FILE).is_file() else {}
        _check_files(path)
        try:
            config = AutoConfig.from_pretrained(path)
        except Exception as error:
            raise ModelLoadError(f"{path / 'config.json'}: cannot be read: {error}") from error
        if num_labels is not None and num_labels < 1:
            raise ValueError(f"num_labels must be at least 1, got {num_labels}")
        # A saved cross-encoder keeps its head; a plain encoder's config.num_labels is only a default.
        classifier = any(str(a).endswith("ForSequenceClassification") for a in config.architectures or [])
        saved_labels = int(config.num_labels) if settings or classifier else None
        labels = num_labels or saved_labels or 1
        if saved_labels is not None and labels != saved_labels:
            logger.warning(
                "%s: the saved head has %d outputs; starting a new %d-output head", path, saved_labels, labels
            )
        names = list(label_names) if label_names else None
        if names is not None and len(names) != labels:
            raise ValueError(f"{len(names)} label names for {labels} labels")
        config.num_labels = labels
        if names is not None:
            config.id2label = dict(enumerate(names))
            config.label2id = {name: i for i, name in enumerate(names)}
        try:
            with quiet_transformers():
                model = AutoModelForSequenceClassification.from_pretrained(
                    path, config=config, use_safetensors=True, ignore_mismatched_sizes=True
                )
        except Exception as error:
            raise ModelLoadError(f"{path / 'model.safetensors'}: cannot be loaded: {error}") from error
        tokenizer = load_fast_tokenizer(path)
        encoder = cls(
            model,
            tokenizer,
            max_seq_length=max_seq_length or settings.get("max_seq_length"),
            name=str(name_or_path or DEFAULT_MODEL),
        )
        encoder.eval()
        return encoder.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))

    @property
    def num_labels(self) -> int:
        return int(self.model.config.num_labels or 1)

    @property
    def label_names(self) -> list[str]:
        id2label: dict = self.model.config.id2label or {}
        return [str(id2label.get(i, f"LABEL_{i}")) for i in range(self.num_labels)]

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def tokenize(self, pairs: Sequence[tuple[str, str]]) -> TokenizedPairs:
        """Token ids of ``[CLS] A [SEP] B [SEP]`` per pair, unpadded, cut to ``max_seq_length``."""
        _check_pairs(pairs)
        encoded = self.tokenizer(
            [a for a, _ in pairs],
            [b for _, b in pairs],
            truncation="longest_first",
            max_length=self.max_seq_length,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=True,
        )
        truncated = sum(1 for encoding in encoded.encodings if encoding.overflowing)
        return TokenizedPairs(encoded["input_ids"], encoded["token_type_ids"], truncated)

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

    def collate(self, pairs: Sequence[tuple[str, str]]) -> dict[str, Tensor]:
        """Tokenize and pad a batch of pairs: the features :meth:`forward` takes (for training, too)."""
        tokenized = self.tokenize(pairs)
        return self.pad(tokenized.ids, tokenized.token_types)

    def forward(self, features: dict[str, Tensor]) -> Tensor:
        """Logits (batch, num_labels) of a padded batch; gradients flow when in training mode."""
        inputs = {key: value.to(self.device) for key, value in features.items() if key in _MODEL_INPUTS}
        return self.model(**inputs, return_dict=True).logits

    def predict(
        self,
        pairs: Sequence[tuple[str, str]],
        batch_size: int = 32,
        apply_activation: bool = True,
        show_progress_bar: bool | None = None,
    ) -> np.ndarray:
        """Score pairs; the output keeps the input order.

        Pairs are sorted by token length and padded per batch, as in ``SentenceEncoder.encode``.

        Args:
            pairs: ``(sentence_a, sentence_b)`` tuples.
            batch_size: Pairs per forward pass.
            apply_activation: Sigmoid (1 label) or softmax (k labels); ``False`` gives raw logits.
            show_progress_bar: Default: on for 1000 pairs or more.

        Returns:
            (n,) for one label, (n, num_labels) otherwise.
        """
        pairs = list(pairs)
        logits = torch.empty((len(pairs), self.num_labels), dtype=torch.float32)
        if pairs:
            tokenized = self.tokenize(pairs)
            batches = length_sorted_batches(tokenized.lengths, batch_size)
            if show_progress_bar is None:
                show_progress_bar = len(pairs) >= PROGRESS_BAR_MIN_SENTENCES
            was_training = self.training
            self.eval()
            with torch.inference_mode():
                for batch in tqdm(batches, desc="Scoring pairs", unit="batch", disable=not show_progress_bar):
                    features = self.pad(
                        [tokenized.ids[i] for i in batch], [tokenized.token_types[i] for i in batch]
                    )
                    logits[torch.from_numpy(batch)] = self(features).float().cpu()
            self.train(was_training)
        if apply_activation:
            logits = torch.sigmoid(logits) if self.num_labels == 1 else torch.softmax(logits, dim=1)
        return (logits[:, 0] if self.num_labels == 1 else logits).numpy()

    def rerank(
        self, query: str, candidates: Sequence[str], top_k: int | None = None, batch_size: int = 32
    ) -> list[Ranked]:
        """Order candidates by the score of ``(query, candidate)``, best first (ties: earlier first).

        Needs a one-output (regression) model. Not run by the tests: a new head is untrained, so
        its order is random. Example:
            >>> model = CrossEncoder.from_pretrained(num_labels=1)
            >>> [r.corpus_id for r in model.rerank("music", ["a song", "a tax form"], top_k=1)]  # doctest: +SKIP
            [0]
        """
        if self.num_labels != 1:
            raise ValueError(f"rerank needs a one-output model; this one has {self.num_labels} labels")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        scores = self.predict([(query, text) for text in candidates], batch_size=batch_size)
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [Ranked(int(i), float(scores[i]), candidates[i]) for i in order]

    def save(self, path: str | Path) -> None:
        """Write a Hugging Face directory (safetensors) plus ``sbert_cross_encoder.json``, atomically."""
        path = Path(path)
        staging = staging_dir(path)
        try:
            self.model.config.sentence_transformers = {
                "activation_fn": _ACTIVATIONS.get(self.num_labels, "torch.nn.modules.linear.Identity"),
                "version": "sbert-" + __version__,
            }
            with quiet_transformers():
                self.model.save_pretrained(staging, safe_serialization=True)
            self.tokenizer.save_pretrained(staging)
            settings = {
                "sbert_version": __version__,
                "head": "regression" if self.num_labels == 1 else "classification",
                "num_labels": self.num_labels,
                "label_names": self.label_names,
                "activation": "sigmoid" if self.num_labels == 1 else "softmax",
                "max_seq_length": self.max_seq_length,
            }
            (staging / CONFIG_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
            replace_dir(staging, path)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def _transformer_folder(path: Path) -> Path:
    """The Hugging Face folder inside a sentence-transformers directory (the bundled model's is its root)."""
    modules = path / "modules.json"
    if not modules.is_file():
        return path
    for entry in read_json(modules):
        if str(entry.get("type", "")).endswith("Transformer"):
            return path / entry.get("path", "")
    raise ModelLoadError(f"{modules}: lists no Transformer module")


def _check_files(path: Path) -> None:
    if not (path / "config.json").is_file():
        raise ModelLoadError(
            f"{path / 'config.json'}: missing; a Hugging Face model directory needs config.json"
        )
    if not (path / "model.safetensors").is_file() and not (path / "model.safetensors.index.json").is_file():
        raise ModelLoadError(
            f"{path / 'model.safetensors'}: missing. sbert loads weights from safetensors only and never unpickles."
        )


def _check_pairs(pairs: Sequence[object]) -> None:
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
            raise TypeError(f"pairs[{index}] must be a (str, str) pair, got {pair!r:.80}")
