"""Transformer: text → tokens → token vectors, with a Hugging Face encoder and its fast tokenizer."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import transformers
from torch import Tensor
from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.utils import logging as hf_logging

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.base.inputs import check_max_seq_length
from sbert.modules.batch_tokenizer import BatchTokenizer, ThreadTokenizers
from sbert.modules.checks import (
    check_loading_info,
    check_sentence_bert_config,
    check_tokenizer,
    config_failure,
    position_limit,
    tokenizer_failure,
)
from sbert.modules.lowercase import lower_inside
from sbert.modules.module import Module, write_json


@dataclass
class Tokenized:
    """Token ids of a list of texts, unpadded, and how many texts were cut to ``max_seq_length``."""

    ids: Sequence[Sequence[int]]
    truncated: int

    @property
    def lengths(self) -> list[int]:
        flat = getattr(self.ids, "lengths", None)  # a static model's FlatIds knows them
        return flat.tolist() if flat is not None else [len(ids) for ids in self.ids]


class Transformer(Module):
    """A Hugging Face encoder with its tokenizer: the token-level half of a sentence encoder.

    Args:
        model: Any ``AutoModel`` encoder (BERT, RoBERTa, MiniLM, ...), a decoder (with
            ``lasttoken`` pooling) or the encoder of a T5 (``T5EncoderModel``: sentence-t5, GTR).
        tokenizer: Its fast tokenizer.
        max_seq_length: Longer inputs are truncated to this many tokens (special tokens included).
        do_lower_case: Lower-case inside the tokenizer, its first normalizer (for cased models used
            uncased; sentence-transformers 6.2's rule, :mod:`sbert.modules.lowercase`).
    """

    st_type = "sentence_transformers.models.Transformer"
    config_file_name = "sentence_bert_config.json"
    config_keys = ("max_seq_length", "do_lower_case")
    # sentence-transformers 6's transformer_task this class runs; a subclass naming another one
    # loads the folders whose sentence_bert_config.json names it (the MLM transformer: fill-mask).
    transformer_task: ClassVar[str] = "feature-extraction"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "transformer_task" in cls.__dict__:
            _TASK_CLASSES[cls.transformer_task] = cls

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        check_max_seq_length(max_seq_length, None, "Transformer")
        self.max_seq_length = (
            default_max_seq_length(model, tokenizer) if max_seq_length is None else max_seq_length
        )
        self._lowered: tuple[bool, Any] = (False, None)  # whether do_lower_case changed the normalizer
        self.do_lower_case = do_lower_case
        self.accepts_token_types = "token_type_ids" in tokenizer.model_input_names
        self._batch_tokenizers = ThreadTokenizers()  # a private copy per calling thread

    @property
    def do_lower_case(self) -> bool:
        """Lower-case inside the tokenizer, as sentence-transformers 6.2 does (:mod:`sbert.modules.lowercase`)."""
        return self._do_lower_case

    @do_lower_case.setter
    def do_lower_case(self, value: bool) -> None:
        self._do_lower_case = bool(value)
        if not self.tokenizer.is_fast:
            return  # a Python tokenizer: the text is lowered (_cased)
        changed, before = self._lowered
        if value and not changed:
            self._lowered = lower_inside(self.tokenizer)
        elif not value and changed:
            self.tokenizer.backend_tokenizer.normalizer = before
            self._lowered = (False, None)
        self._batch_tokenizers = ThreadTokenizers()  # copies made before lower as they did

    @classmethod
    def load(
        cls,
        folder: str | Path,
        max_seq_length: int | None = None,
        do_lower_case: bool | None = None,
        **options: Any,
    ) -> Transformer:
        """Load a sentence-transformers Transformer folder: a Hugging Face model directory and its
        ``sentence_bert_config.json`` (``max_seq_length``, ``do_lower_case``), if any; the
        arguments override the file."""
        folder = Path(folder)
        settings_file = folder / cls.config_file_name
        settings = read_json(settings_file) if settings_file.is_file() else {}
        check_sentence_bert_config(settings, folder)
        task = settings.get("transformer_task", cls.transformer_task)
        if task != cls.transformer_task and task in _TASK_CLASSES:  # sentence-transformers 6: one
            # Transformer type for every task; a fill-mask one is a SPLADE model's MLM transformer.
            return _TASK_CLASSES[task].load(folder, max_seq_length, do_lower_case, **options)
        return cls.load_pretrained(
            folder,
            max_seq_length=settings.get("max_seq_length") if max_seq_length is None else max_seq_length,
            do_lower_case=bool(settings.get("do_lower_case", False))
            if do_lower_case is None
            else do_lower_case,
        )

    @classmethod
    def load_pretrained(
        cls, path: str | Path, max_seq_length: int | None = None, do_lower_case: bool = False
    ) -> Transformer:
        """Load a Hugging Face model directory (``config.json``, ``model.safetensors``, tokenizer files)."""
        path = Path(path)
        config_file = path / "config.json"
        if not config_file.is_file():
            raise ModelLoadError(f"{config_file}: missing; a Hugging Face model directory needs config.json")
        weights = path / "model.safetensors"
        if not weights.is_file() and not (path / "model.safetensors.index.json").is_file():
            found = ", ".join(sorted(p.name for p in path.glob("*.bin"))) or "no weights file"
            raise ModelLoadError(
                f"{weights}: missing ({found} found). sbert loads weights from safetensors only and never "
                "unpickles; convert the checkpoint with safetensors first."
            )
        try:
            config = AutoConfig.from_pretrained(path)
        except Exception as error:  # broken JSON, unknown model type
            raise ModelLoadError(f"{config_file}: cannot be read: {error}") from error
        try:
            with quiet_transformers():  # its load report is silenced: check_loading_info names the weights
                model, info = cls.auto_class(config).from_pretrained(
                    path,
                    config=config,
                    use_safetensors=True,
                    output_loading_info=True,
                    ignore_mismatched_sizes=True,
                )
        except Exception as error:  # a config that builds no model, or truncated or corrupt safetensors
            blame = config_failure(config_file, config, cls.build_model) or ModelLoadError(
                f"{weights}: cannot be loaded: {error}"
            )
            raise blame from error
        cls.check_weights(weights, info, model)
        check_max_seq_length(max_seq_length, position_limit(config), str(path))
        tokenizer = load_fast_tokenizer(path)
        check_tokenizer(path, tokenizer, model.get_input_embeddings().num_embeddings)
        return cls(model, tokenizer, max_seq_length=max_seq_length, do_lower_case=do_lower_case)

    @classmethod
    def auto_class(cls, config: PretrainedConfig) -> Any:
        """The transformers class that loads ``config``'s model (:func:`model_class`)."""
        return model_class(config)

    @classmethod
    def build_model(cls, config: PretrainedConfig) -> PreTrainedModel:
        """The randomly initialised model of :meth:`auto_class` (``config.json``'s checks build it)."""
        return build_model(config)

    @classmethod
    def check_weights(cls, weights: Path, info: Mapping[str, Any], model: PreTrainedModel) -> None:
        """Refuse weights that do not match the config (:func:`check_loading_info`)."""
        check_loading_info(weights, info)

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        """Tokenize without padding; padding happens per batch in :meth:`collate`. Safe to call from
        several threads at once where the tokenizer encodes in Rust alone (:class:`BatchTokenizer`)."""
        texts = self._cased(texts)
        batch_tokenizer = self._batch_tokenizer(self.max_seq_length)
        if batch_tokenizer is not None:
            ids, truncated = batch_tokenizer(texts)
            return Tokenized(ids=ids, truncated=truncated)
        encoded = self.tokenizer(
            list(texts),
            truncation=True,
            max_length=self.max_seq_length,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        truncated = sum(1 for encoding in encoded.encodings if encoding.overflowing)
        return Tokenized(ids=encoded["input_ids"], truncated=truncated)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text before truncation, special tokens included."""
        return [len(row) for row in self.whole_token_ids(texts)]

    def whole_token_ids(self, texts: Sequence[str]) -> Sequence[Sequence[int]]:
        """Token ids of each text without truncation, special tokens included (:meth:`token_counts`'
        ids; ``sbert serve`` tokenizes each request once with it). Safe from several threads at once
        where :meth:`tokenize` is."""
        return self._whole_ids(self._cased(texts))

    def prompt_length(self, prompt: str) -> int:
        """The tokens a prompt puts before a sentence: its own tokens with the leading special token,
        without a trailing one (sentence-transformers' count, which ``include_prompt=False`` leaves out).

        Raises:
            ValueError: the prompt alone fills ``max_seq_length``: no sentence would fit after it.
        """
        ids = self._whole_ids(self._cased([prompt]))[0]
        if len(ids) >= self.max_seq_length:
            raise ValueError(
                f"the prompt {prompt!r} alone is {len(ids)} tokens, and max_seq_length is {self.max_seq_length}"
            )
        return len(ids) - (1 if ids and ids[-1] in self.tokenizer.all_special_ids else 0)

    def _cased(self, texts: Sequence[str]) -> Sequence[str]:
        if not self.do_lower_case or self.tokenizer.is_fast:  # a fast one lowers inside itself
            return texts
        return [text.lower() for text in texts]

    def _whole_ids(self, texts: Sequence[str]) -> Sequence[Sequence[int]]:
        """Token ids without truncation (counts the server checks on every request, prompts)."""
        batch_tokenizer = self._batch_tokenizer(None)
        if batch_tokenizer is not None:
            return batch_tokenizer(texts)[0]
        options = {"truncation": False, "return_attention_mask": False, "return_token_type_ids": False}
        return self.tokenizer(list(texts), verbose=False, **options)["input_ids"]

    def _batch_tokenizer(self, max_length: int | None) -> BatchTokenizer | None:
        """This thread's private tokenizer that cuts to ``max_length`` (``None``: never), built again
        when a setting it copied changes (users set ``max_seq_length``), or ``None`` where the
        tokenizer's class needs transformers' call. One copy per thread: threads sharing one contend
        on its locks (:class:`ThreadTokenizers`)."""
        if not BatchTokenizer.supports(self.tokenizer):
            return None
        return self._batch_tokenizers.get(self.tokenizer, max_length)

    def collate(self, batch_ids: Sequence[Sequence[int]]) -> dict[str, Tensor]:
        """Pad a batch only to its longest member: ``input_ids`` and ``attention_mask``, (batch, seq)."""
        # Padded in numpy, not row by row in torch: encode() runs this once per batch on the Python
        # thread while the cores compute (27 ms → 3 ms for the 87 batches of STSb test).
        lengths = np.fromiter(map(len, batch_ids), dtype=np.int64, count=len(batch_ids))
        mask = np.arange(lengths.max()) < lengths[:, None]  # (batch, longest)
        input_ids = np.full(mask.shape, self.tokenizer.pad_token_id or 0, dtype=np.int64)
        input_ids[mask] = np.fromiter(itertools.chain.from_iterable(batch_ids), np.int64, int(lengths.sum()))
        features = {
            "input_ids": torch.from_numpy(input_ids),
            "attention_mask": torch.from_numpy(mask.astype(np.int64)),
        }
        if self.accepts_token_types:
            features["token_type_ids"] = torch.zeros_like(features["input_ids"])
        return features

    def forward(self, features: dict[str, Tensor]) -> Tensor:
        """Token vectors of the last layer, (batch, seq, hidden)."""
        inputs = {key: value for key, value in features.items() if key in _MODEL_INPUTS}
        return self.model(**inputs, return_dict=True).last_hidden_state

    def save(self, folder: Path) -> None:
        """The Hugging Face model (safetensors), its tokenizer and ``sentence_bert_config.json``."""
        with quiet_transformers():
            self.model.save_pretrained(folder, safe_serialization=True)
        self.tokenizer.save_pretrained(folder)
        write_json(folder / self.config_file_name, self.config())


_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_TASK_CLASSES: dict[str, type[Transformer]] = {"feature-extraction": Transformer}

# Encoder-decoder models whose encoder alone makes token vectors (sentence-t5, GTR): AutoModel would
# build the whole seq2seq model, whose decoder then asks for inputs (sentence-transformers does the same).
_ENCODER_ONLY = {"t5": "T5EncoderModel", "mt5": "MT5EncoderModel", "umt5": "UMT5EncoderModel"}


def model_class(config: PretrainedConfig) -> Any:
    """The transformers class that loads ``config``'s token encoder: ``AutoModel``, or the encoder
    half of a T5."""
    name = _ENCODER_ONLY.get(getattr(config, "model_type", ""))
    return getattr(transformers, name) if name else AutoModel


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' per-load progress bar and load report, restoring the caller's settings."""
    bars_were_on = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars_were_on:
            hf_logging.enable_progress_bar()


def build_model(config: PretrainedConfig) -> PreTrainedModel:
    """The (randomly initialised) model ``config`` describes, of :func:`model_class`."""
    cls = model_class(config)
    return cls.from_config(config) if cls is AutoModel else cls._from_config(config)  # type: ignore[no-any-return]


def load_fast_tokenizer(path: Path) -> PreTrainedTokenizerBase:
    """The fast (Rust) tokenizer saved in ``path``; the error names the file at fault where it can
    be told (:func:`~sbert.modules.checks.tokenizer_failure`), else the folder."""
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except Exception as error:
        raise tokenizer_failure(path, error) from error
    if not tokenizer.is_fast:
        raise ModelLoadError(f"{path}: sbert needs a fast (Rust) tokenizer; tokenizer.json is missing")
    return tokenizer


def default_max_seq_length(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> int:
    """The longest input the model can take: its position table, or the tokenizer's limit if smaller."""
    positions = int(getattr(model.config, "max_position_embeddings", 512))
    if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        positions -= 2  # RoBERTa's position ids start after the padding index
    limit = tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000 else positions
    return min(positions, int(limit))
