"""Checks on a model folder before it is used: nothing that would give wrong vectors loads without a word.

Each check is a pure function over what a loader has already read (a path, a config, transformers'
loading report, a token table). It raises :class:`~sbert.base.errors.ModelLoadError` naming the file and
the fix, or, where the model is still right, logs a warning on the ``"sbert"`` logger. What is
checked, and why each case is an error or a warning:

- the tokenizer is read from a vocabulary file (``tokenizer.json``, ``vocab.txt``, ...): without one,
  transformers builds a tokenizer of the special tokens alone and every word becomes ``[UNK]``;
- every token of the tokenizer's vocabulary, and each special token it puts in every input, has a row
  in the embedding table;
- the weights match ``config.json``: a weight the config asks for and the file lacks is an error
  (transformers fills it with random numbers and only warns); a weight of another shape is an
  error (as in transformers); a weight in the file that the config does not use is a warning
  naming it (transformers warns too: a checkpoint saved with a task head is fine, but a config
  edited to fewer layers is not the model that was trained). The pooler alone may be missing:
  sbert's vectors never read it (logged at INFO);
- ``max_seq_length`` is a whole number from 1 to the model's table of absolute positions (none for
  rotary or relative positions); ``do_lower_case`` and the pooling flags are JSON booleans (the
  string ``"false"`` would count as true);
- a static model's token table holds no NaN or infinity.

Where loading fails outright, the message names the file at fault: ``config.json`` when transformers
cannot build the model it describes (with the hidden size the weights hold where they disagree), a
tokenizer file that is not valid JSON (with its line and column), else the weights or the folder.
"""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer
from transformers import PretrainedConfig, PreTrainedTokenizerBase

from sbert.base.errors import ModelLoadError
from sbert.base.inputs import check_max_seq_length

logger = logging.getLogger("sbert")

# Weights of a Hugging Face encoder that sbert's vectors never read (it takes last_hidden_state).
_UNUSED_BY_SBERT = ("pooler.",)
# Models whose position ids start after the padding index, so two positions are never an input's.
_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "mpnet")
_SHOWN = 5  # names listed in a message; the rest are counted


def check_tokenizer(path: Path, tokenizer: PreTrainedTokenizerBase, rows: int) -> None:
    """Refuse a tokenizer built without a vocabulary file, or with ids past the embedding table.

    Args:
        path: The model folder the tokenizer was read from.
        tokenizer: The tokenizer transformers built from it.
        rows: Rows of the model's input embedding table (its ``vocab_size``).

    Raises:
        ModelLoadError: no vocabulary file is in ``path``, or a token id is ``rows`` or more.

    Examples:
        >>> from pathlib import Path
        >>> from tokenizers import Tokenizer, models
        >>> from transformers import PreTrainedTokenizerFast
        >>> tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1})))
        >>> check_tokenizer(Path("no-such-folder"), tokenizer, rows=2)
        Traceback (most recent call last):
        ...
        sbert.base.errors.ModelLoadError: no-such-folder: no tokenizer vocabulary: none of tokenizer.json, tokenizer.model is there...
    """
    names = list(dict.fromkeys(tokenizer.vocab_files_names.values()))
    if not any((path / name).is_file() for name in names):
        raise ModelLoadError(
            f"{path}: no tokenizer vocabulary: none of {', '.join(names)} is there, and a tokenizer "
            f"built without one knows {len(tokenizer)} tokens (every word would be unknown). Copy the "
            "tokenizer files of the model these weights come from into the folder."
        )
    # The vocabulary and the tokens put in every input; an added token past the table (Qwen2's
    # tokenizer adds one) only comes from text that spells it, and then encode() fails loudly.
    inserted = [*tokenizer("")["input_ids"], tokenizer.pad_token_id or 0]
    largest = max(tokenizer.vocab_size - 1, *inserted)
    if largest >= rows:
        raise ModelLoadError(
            f"{path}: the tokenizer gives token ids up to {largest}, but the embedding table has {rows} "
            "rows (config.json vocab_size): the tokenizer and the weights come from different models"
        )


def check_loading_info(weights: Path, info: Mapping[str, Collection[Any]]) -> None:
    """Refuse weights that do not match ``config.json``; warn, naming them, about weights left unused.

    Args:
        weights: The weights file, named in the messages.
        info: What ``AutoModel.from_pretrained(..., output_loading_info=True)`` reports:
            ``missing_keys``, ``unexpected_keys`` and ``mismatched_keys`` ((name, file shape,
            model shape) triples; loaded with ``ignore_mismatched_sizes=True`` so that they are
            reported here, by name, instead of raised with a pointer to a report sbert silences).

    Raises:
        ModelLoadError: a weight is missing or of another shape; transformers would put random
            numbers in its place, and every vector would be wrong.

    Examples:
        >>> from pathlib import Path
        >>> check_loading_info(Path("model.safetensors"), {"missing_keys": {"encoder.layer.2.output.dense.weight"}})
        Traceback (most recent call last):
        ...
        sbert.base.errors.ModelLoadError: model.safetensors: 1 weights that config.json asks for are not in the file ...
    """
    mismatched = sorted(info.get("mismatched_keys", ()))
    if mismatched:
        shapes = [
            f"{name} {tuple(saved)} (config.json: {tuple(wanted)})" for name, saved, wanted in mismatched
        ]
        raise ModelLoadError(
            f"{weights}: {len(shapes)} weights have another shape than config.json describes: "
            f"{_some(shapes)}. The config is not the one these weights were saved with."
        )
    missing = sorted(info.get("missing_keys", ()))
    unused_by_sbert = [name for name in missing if name.startswith(_UNUSED_BY_SBERT)]
    missing = [name for name in missing if name not in unused_by_sbert]
    if missing:
        raise ModelLoadError(
            f"{weights}: {len(missing)} weights that config.json asks for are not in the file "
            f"({_some(_by_layer(missing))}); they would be random numbers. The config is not the one these "
            "weights were saved with (compare num_hidden_layers, hidden_size, model_type)."
        )
    if unused_by_sbert:
        logger.info(
            "%s: no pooler weights (%s); sbert's vectors do not use them", weights, _some(unused_by_sbert)
        )
    unexpected = sorted(info.get("unexpected_keys", ()))
    if unexpected:
        logger.warning(
            "%s: %d weights in the file are not used by the model config.json describes: %s. Fine for "
            "a checkpoint saved with a task head; if config.json was edited (num_hidden_layers), "
            "this is not the model that was trained.",
            weights,
            len(unexpected),
            _some(_by_layer(unexpected)),
        )


def position_limit(config: PretrainedConfig | Mapping[str, Any]) -> int | None:
    """The longest input a model's position table holds, from its config (``None``: no table)."""
    get = config.get if isinstance(config, Mapping) else lambda key: getattr(config, key, None)
    positions = get("max_position_embeddings")
    rotary = any(get(key) is not None for key in ("rope_parameters", "rope_theta", "rope_scaling"))
    if not isinstance(positions, int) or rotary or get("position_biased_input") is False:
        return None  # no table of absolute positions: a longer input runs (and degrades)
    return positions - 2 if get("model_type") in _OFFSET_POSITIONS else positions


def check_sentence_bert_config(settings: Mapping[str, Any], folder: Path) -> None:
    """Check ``sentence_bert_config.json``: ``max_seq_length`` fits the model, ``do_lower_case`` is a boolean.

    Raises:
        ModelLoadError: naming the file and the setting.
    """
    file = folder / "sentence_bert_config.json"
    config_file = folder / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # no limit to check against; the transformer's loader names the file
        config = {}
    check_max_seq_length(settings.get("max_seq_length"), position_limit(config), str(file))
    _check_booleans(settings, ["do_lower_case"], file)


def check_pooling_config(config: dict[str, Any], file: Path) -> dict[str, Any]:
    """Return the pooling ``config`` read from ``file`` once its flags are checked to be JSON booleans.

    Raises:
        ModelLoadError: a ``pooling_mode_*`` flag or ``include_prompt`` is not ``true``/``false``.
    """
    _check_booleans(
        config, [key for key in config if key.startswith("pooling_mode_")] + ["include_prompt"], file
    )
    return config


def check_finite_table(table: torch.Tensor, file: Path, tokenizer: Tokenizer) -> None:
    """Refuse a static model's (vocabulary, dim) token table that holds NaN or infinity.

    Raises:
        ModelLoadError: naming the file, the rows and their tokens.

    Examples:
        >>> import torch
        >>> from pathlib import Path
        >>> from tokenizers import Tokenizer, models
        >>> tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "nan": 1}, unk_token="[UNK]"))
        >>> check_finite_table(torch.tensor([[0.5], [float("nan")]]), Path("model.safetensors"), tokenizer)
        Traceback (most recent call last):
        ...
        sbert.base.errors.ModelLoadError: model.safetensors: 1 token vectors hold NaN or infinity: row 1 ('nan')...
    """
    # A row's sum is NaN or inf where the row holds one (or overflows): 10x faster than isfinite on
    # every entry of a large table, which then runs on those rows alone.
    suspects = (~torch.isfinite(table.sum(dim=1))).nonzero().flatten()  # (rows,)
    bad = suspects[~torch.isfinite(table[suspects]).all(dim=1)].tolist()
    if bad:
        rows = [f"row {row} ({tokenizer.id_to_token(row)!r})" for row in bad]
        raise ModelLoadError(
            f"{file}: {len(bad)} token vectors hold NaN or infinity: {_some(rows)}; every sentence "
            "with one of these tokens would get a NaN vector. Fit or distill the model again."
        )


def config_failure(
    config_file: Path, config: PretrainedConfig, build: Callable[[PretrainedConfig], Any]
) -> ModelLoadError | None:
    """The error naming ``config.json`` where ``build(config)`` fails (built on the meta device: no
    memory, no weights read), with the hidden size the weights hold where it differs; ``None`` where
    the model builds, so that a failed load is the weights' fault.

    Examples:
        >>> from transformers import AutoModel, BertConfig
        >>> config = BertConfig(hidden_size=999, num_attention_heads=2)
        >>> print(config_failure(Path("m/config.json"), config, AutoModel.from_config))
        m/config.json: describes no model transformers can build: The hidden size (999) is not a multiple of the number of attention heads (2)
    """
    try:
        with torch.device("meta"):
            build(config)
    except Exception as error:
        saved = saved_width(config_file.parent)
        hidden = getattr(config, "hidden_size", None)
        disagree = (
            f"; the weights hold {saved[0]} of shape {saved[1]}: hidden size {saved[1][-1]}, where "
            f"config.json says {hidden}"
            if saved and saved[1][-1] != hidden
            else ""
        )
        return ModelLoadError(f"{config_file}: describes no model transformers can build: {error}{disagree}")
    return None


_EMBEDDINGS = ("word_embeddings.weight", "embed_tokens.weight", "shared.weight")


def saved_width(folder: Path) -> tuple[str, list[int]] | None:
    """The token embedding table's name and shape in a folder's safetensors (read from the header
    alone; with an index, the shard it names), or ``None`` where it cannot be told."""
    weights, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    try:
        if not weights.is_file():
            shards = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            name = next(n for n in shards if n.endswith(_EMBEDDINGS))
            weights = folder / shards[name]
        with weights.open("rb") as file:
            (size,) = struct.unpack("<Q", file.read(8))
            header = json.loads(file.read(min(size, 100_000_000)))
        name = next(n for n in header if n.endswith(_EMBEDDINGS))
        return name, list(header[name]["shape"])
    except (OSError, ValueError, KeyError, StopIteration, struct.error, TypeError):
        return None


_TOKENIZER_JSON = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")


def tokenizer_failure(folder: Path, error: Exception) -> ModelLoadError:
    """The error for tokenizer files transformers cannot load, naming the file at fault where one is
    not valid JSON (its line and column) or is a ``tokenizer.json`` the Rust tokenizer refuses; else
    the folder, with transformers' message."""
    for name in _TOKENIZER_JSON:
        file = folder / name
        if not file.is_file():
            continue
        try:
            json.loads(file.read_text(encoding="utf-8"))
        except UnicodeDecodeError as bad:
            return ModelLoadError(f"{file}: cannot be read: not UTF-8 (byte {bad.start})")
        except json.JSONDecodeError as bad:
            cut = " (the file ends there: cut short?)" if bad.pos >= len(bad.doc.rstrip()) else ""
            return ModelLoadError(
                f"{file}: not valid JSON at line {bad.lineno}, column {bad.colno}: {bad.msg}{cut}"
            )
        except OSError as bad:
            return ModelLoadError(f"{file}: cannot be read: {bad}")
        if name == "tokenizer.json":
            try:
                Tokenizer.from_file(str(file))
            except Exception as bad:
                return ModelLoadError(f"{file}: not a tokenizer the tokenizers library reads: {bad}")
    return ModelLoadError(f"{folder}: the tokenizer files cannot be loaded: {error}")


def _check_booleans(config: Mapping[str, Any], keys: Iterable[str], file: Path) -> None:
    for key in keys:
        if key in config and not isinstance(config[key], bool):
            raise ModelLoadError(f"{file}: {key} is {config[key]!r}; write true or false (JSON booleans)")


def _by_layer(names: list[str]) -> list[str]:
    """The names, those of one numbered layer as one entry: ``encoder.layer.1.* (16 weights)``."""
    layers: dict[str, list[str]] = {}
    for name in names:
        parts = name.split(".")
        end = next((i + 1 for i, part in enumerate(parts[:-1]) if part.isdigit()), None)
        layers.setdefault(".".join(parts[:end]) + ".*" if end else name, []).append(name)
    return [f"{key} ({len(group)} weights)" if len(group) > 1 else group[0] for key, group in layers.items()]


def _some(names: list[str]) -> str:
    """The first few of ``names``, and how many more."""
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more
