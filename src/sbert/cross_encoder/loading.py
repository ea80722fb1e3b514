"""A cross-encoder's folder: what is read from it and what is written to it.

sbert reads three layouts, as sentence-transformers' ``CrossEncoder`` does: a plain Hugging Face
sequence-classification folder, sentence-transformers' own (``modules.json`` naming the Transformer
folder, ``config_sentence_transformers.json`` naming the activation) and sbert's (a Hugging Face
folder plus ``sbert_cross_encoder.json``). It writes a Hugging Face folder that sentence-transformers
loads as it is: the activation in ``config.json``'s ``sentence_transformers`` entry, the length
limit in ``tokenizer_config.json``'s ``model_max_length``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from sbert.base import json_text
from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.model.by_name import ST_BACKENDS
from sbert.modules.checks import check_loading_info
from sbert.modules.transformer import load_fast_tokenizer, quiet_transformers

logger = logging.getLogger("sbert")

CONFIG_FILE = "sbert_cross_encoder.json"
ST_CONFIG_FILE = "config_sentence_transformers.json"

Activation = Callable[[Tensor], Tensor]

# sbert's names of the activations it writes in CONFIG_FILE; others are written as their class path.
SIGMOID = "torch.nn.modules.activation.Sigmoid"
SOFTMAX = "torch.nn.modules.activation.Softmax"
IDENTITY = "torch.nn.modules.linear.Identity"
_SHORT_NAMES = {"sigmoid": SIGMOID, "softmax": SOFTMAX, "identity": IDENTITY}


class Softmax(nn.Softmax):
    """Softmax over the labels (the last axis), saved under torch's class path so that
    sentence-transformers, which builds it without an axis, gives the same probabilities."""

    def __init__(self) -> None:
        super().__init__(dim=-1)


def st_default_activation(num_labels: int) -> nn.Module:
    """sentence-transformers' default: a sigmoid for one label, the logits themselves otherwise."""
    return nn.Sigmoid() if num_labels == 1 else nn.Identity()


def sbert_default_activation(num_labels: int) -> nn.Module:
    """``from_pretrained``'s default: a sigmoid for one label, a softmax (probabilities) otherwise."""
    return nn.Sigmoid() if num_labels == 1 else Softmax()


def activation_path(activation: Activation) -> str:
    """The class path an activation is saved under (sentence-transformers' ``fullname``)."""
    if isinstance(activation, Softmax):
        return SOFTMAX
    kind = activation if isinstance(activation, type) else type(activation)
    if kind.__module__ == "builtins":  # a function, not a module instance
        return f"{getattr(activation, '__module__', '')}.{getattr(activation, '__qualname__', '')}"
    return f"{kind.__module__}.{kind.__qualname__}"


def activation_from_path(path: str, source: Path) -> nn.Module | None:
    """The activation a saved path names: torch's own classes only, as sentence-transformers loads
    them without ``trust_remote_code`` (``None`` with a warning otherwise)."""
    path = _SHORT_NAMES.get(path, path)
    if path == SOFTMAX:
        return Softmax()
    module_name, _, class_name = path.rpartition(".")
    kind = getattr(torch.nn, class_name, None) if module_name.startswith("torch.nn") else None
    if not (isinstance(kind, type) and issubclass(kind, nn.Module)):
        logger.warning("%s: activation %r is not a torch.nn class; the default is used instead", source, path)
        return None
    return kind()


@dataclass
class Loaded:
    """A cross-encoder read from a folder: the model, its tokenizer and what its settings say."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    max_seq_length: int | None = None
    activation: nn.Module | None = None  # saved with the model; None: the caller's default
    settings: dict[str, Any] = field(default_factory=dict)


def load_folder(path: Path, num_labels: int | None, label_names: Sequence[str] | None) -> Loaded:
    """Read a cross-encoder (or an encoder to start one from) from a local folder.

    Raises:
        ModelLoadError: a file missing or unreadable (the message names it); a causal language model.
        ValueError: ``num_labels`` below 1, or as many ``label_names`` as labels not given.
    """
    root = path
    path = _transformer_folder(path)
    settings = read_json(path / CONFIG_FILE) if (path / CONFIG_FILE).is_file() else {}
    _check_files(path)
    try:
        config = AutoConfig.from_pretrained(path)
    except Exception as error:
        raise ModelLoadError(f"{path / 'config.json'}: cannot be read: {error}") from error
    architectures = [str(a) for a in config.architectures or []]
    if any(a.endswith("ForCausalLM") for a in architectures):
        raise ModelLoadError(
            f"{path / 'config.json'}: {architectures[0]} is a causal language model; sbert's CrossEncoder "
            "runs sequence-classification models (a linear head on the encoder)"
        )
    if num_labels is not None and num_labels < 1:
        raise ValueError(f"num_labels must be at least 1, got {num_labels}")
    # A saved cross-encoder keeps its head; a plain encoder's config.num_labels is only a default.
    head = has_head(settings, architectures)
    saved_labels = int(config.num_labels) if head else None
    labels = num_labels or saved_labels or 1
    if saved_labels is not None and labels != saved_labels:  # sentence-transformers refuses it too
        raise ModelLoadError(
            f"{path / 'config.json'}: the saved head has {saved_labels} outputs, and num_labels={labels} "
            f"asks for another head; leave num_labels out (or give {saved_labels}) to load the trained one"
        )
    _name_labels(config, labels, label_names)
    try:
        with quiet_transformers():  # its load report is silenced: check_head names what is new
            model, info = AutoModelForSequenceClassification.from_pretrained(
                path,
                config=config,
                use_safetensors=True,
                ignore_mismatched_sizes=True,
                output_loading_info=True,
            )
    except Exception as error:
        raise ModelLoadError(f"{path / 'model.safetensors'}: cannot be loaded: {error}") from error
    check_head(path / "model.safetensors", model, info, head)
    activation = saved_activation(root, path, config, settings) if labels == saved_labels else None
    tokenizer = load_fast_tokenizer(path)
    return Loaded(model, tokenizer, settings.get("max_seq_length"), activation, settings)


def has_head(settings: dict[str, Any], architectures: Sequence[str]) -> bool:
    """Whether a folder holds a trained cross-encoder head: sbert's settings, or a
    ``*ForSequenceClassification`` architecture in ``config.json`` (else a new head starts random)."""
    return bool(settings) or any(str(name).endswith("ForSequenceClassification") for name in architectures)


def folder_has_head(path: Path) -> bool:
    """:func:`has_head` of a folder (a missing or unreadable ``config.json``: ``False``)."""
    config = read_json(path / "config.json", or_none=True)
    architectures = config.get("architectures") if isinstance(config, dict) else None
    return has_head(read_json(path / CONFIG_FILE, or_none=True) or {}, architectures or [])


def check_head(weights: Path, model: PreTrainedModel, info: dict[str, Any], saved: bool) -> None:
    """Refuse an encoder whose weights are missing or of another shape; name the new head's weights.

    The head is what is outside the encoder (``classifier``...) plus the pooler, which a BERT
    classifier reads: a folder without one (a ``BertForMaskedLM`` or ``BertModel``) gets a new one,
    random, as in sentence-transformers, with a warning naming it; a saved cross-encoder must hold
    its own.

    Raises:
        ModelLoadError: encoder weights missing or of another shape (named), or a saved head missing.
    """
    prefix = model.base_model_prefix
    missing = sorted(info.get("missing_keys", ()))
    new = [
        name for name in missing if not name.startswith(f"{prefix}.") or name.startswith(f"{prefix}.pooler.")
    ]
    check_loading_info(weights, {**info, "missing_keys": [name for name in missing if name not in new]})
    if not new:
        return
    shown = ", ".join(new[:5]) + (f" and {len(new) - 5} more" if len(new) > 5 else "")
    if saved:
        raise ModelLoadError(
            f"{weights}: saved as a cross-encoder, but its head is not in the file ({shown}); "
            "transformers would fill it with random numbers"
        )
    logger.warning(
        "%s: no sequence-classification head in the folder: a new %d-output head (%s) starts from random "
        "weights; its scores mean nothing until it is trained",
        weights.parent,
        model.config.num_labels,
        shown,
    )


def _name_labels(config: Any, labels: int, label_names: Sequence[str] | None) -> None:
    names = list(label_names) if label_names else None
    if names is not None and len(names) != labels:
        raise ValueError(f"{len(names)} label names for {labels} labels")
    config.num_labels = labels
    if names is not None:
        config.id2label = dict(enumerate(names))
        config.label2id = {name: i for i, name in enumerate(names)}


def saved_activation(root: Path, path: Path, config: Any, settings: dict[str, Any]) -> nn.Module | None:
    """The activation a saved model names: sbert's settings, then sentence-transformers' config
    file, then ``config.json``'s ``sentence_transformers`` entry (older sentence-transformers)."""
    candidates: list[tuple[Any, Path]] = [(settings.get("activation"), path / CONFIG_FILE)]
    for folder in dict.fromkeys((root, path)):
        if (folder / ST_CONFIG_FILE).is_file():
            candidates.append(
                (read_json(folder / ST_CONFIG_FILE).get("activation_fn"), folder / ST_CONFIG_FILE)
            )
    entry = getattr(config, "sentence_transformers", None)
    if isinstance(entry, dict):
        candidates.append((entry.get("activation_fn"), path / "config.json"))
    for name, source in candidates:
        if isinstance(name, str) and name:
            return activation_from_path(name, source)
    return None


def save_folder(
    staging: Path,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    activation: Activation,
    settings: dict[str, Any],
) -> None:
    """Write the model, its tokenizer and settings into ``staging`` (the caller moves it into place)."""
    path = activation_path(activation)
    model.config.sentence_transformers = {
        "activation_fn": path,
        "version": "sbert-" + settings["sbert_version"],
    }
    with quiet_transformers():
        model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    # sentence-transformers reads the length limit from the tokenizer's config.
    tokenizer_config = staging / "tokenizer_config.json"
    if tokenizer_config.is_file():
        values = read_json(tokenizer_config)
        values["model_max_length"] = settings["max_seq_length"]
        tokenizer_config.write_text(json_text.dumps(values, indent=2) + "\n", encoding="utf-8")
    short = {value: key for key, value in _SHORT_NAMES.items()}
    settings = {**settings, "activation": short.get(path, path)}
    (staging / CONFIG_FILE).write_text(json_text.dumps(settings, indent=2) + "\n", encoding="utf-8")


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


# sentence-transformers' constructor options that sbert takes only at their defaults.
_ST_DEFAULTS = (
    "cache_folder",
    "revision",
    "token",
    "model_kwargs",
    "processor_kwargs",
    "config_kwargs",
    "model_card_data",
    "prompts",
    "default_prompt_name",
    "keep_in_fp32_modules",
    "trust_remote_code",
    "local_files_only",
    "modules",
)


def check_st_options(options: dict[str, Any], backend: str) -> None:
    """sentence-transformers' options are taken at their defaults only; others name themselves."""
    unknown = sorted(set(options) - set(_ST_DEFAULTS))
    if unknown:
        raise TypeError(f"CrossEncoder() got an unexpected keyword argument {unknown[0]!r}")
    changed = sorted(key for key, value in options.items() if value not in (None, False, {}, []))
    if changed:
        raise ValueError(
            f"CrossEncoder: {changed[0]}={options[changed[0]]!r} is not supported by sbert (it loads "
            "safetensors weights from a local folder or a hub id, in float32, without remote code)"
        )
    if backend not in ST_BACKENDS:
        raise ValueError(f"backend={backend!r}: sbert runs on torch or openvino (or auto), not {backend}")


def constructor_error(first: object) -> str:
    """Why the constructor cannot build from ``first``, and what it takes."""
    if isinstance(first, PreTrainedModel):
        return "CrossEncoder(model, tokenizer): a loaded model needs its tokenizer; or pass a name or path to load"
    return (
        "CrossEncoder takes a model name or path (e.g. CrossEncoder('cross-encoder/ms-marco-MiniLM-L6-v2') "
        f"or a local folder), or a loaded model and its tokenizer, not {type(first).__name__}"
        + ("; CrossEncoder.from_pretrained() loads the bundled model" if first is None else "")
    )
