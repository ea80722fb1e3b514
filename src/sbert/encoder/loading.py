"""Reading a model directory into its modules: the input module, pooling and the layers after it.

Four layouts, as sentence-transformers' ``modules.json`` describes them (or its absence):

- a plain Hugging Face directory: the encoder, then ``pooling`` (default ``"mean"``);
- a sentence-transformers stack: Transformer, Pooling, then Dense and Normalize layers;
- sentence-transformers' ``StaticEmbedding`` layout: a token table (``model.safetensors`` with
  ``embedding.weight``, or model2vec's ``embeddings``) and ``tokenizer.json`` (whose truncation, if
  any, is the model's ``max_seq_length``), optionally followed by Normalize;
- sentence-transformers 5's ``Router``: one such stack per route (``query``, ``document``...), in
  the folders ``router_config.json`` names, followed by the modules listed after the Router.

sbert reads them without importing sentence-transformers. Nothing here imports the encoder: it
composes what this module returns, so the arguments (``max_seq_length``, ``pooling``) flow one way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from torch import nn

from sbert.base.errors import ModelLoadError
from sbert.base.inputs import check_max_seq_length
from sbert.encoder.model_io import _module_entries, load_dense, load_prompts, read_json
from sbert.encoder.prompts import Prompts
from sbert.modules import Dense, Normalize, Pooling, StaticEmbedding, Transformer
from sbert.modules.checks import (
    check_finite_table,
    check_pooling_config,
    check_sentence_bert_config,
)

SUPPORTED = ("Transformer", "StaticEmbedding", "Pooling", "Dense", "Normalize", "Router")


@dataclass
class ModelParts:
    """What a directory holds, ready for :class:`~sbert.SentenceEncoder` to compose."""

    input_module: Transformer | StaticEmbedding
    pooling: Pooling
    layers: list[nn.Module] = field(default_factory=list)
    prompts: Prompts = field(default_factory=Prompts)
    # A Router model (sentence-transformers 5+): every route's stack by name, the top-level fields
    # being those of ``default_route`` (or, with none, the first route's).
    routes: dict[str, ModelParts] = field(default_factory=dict)
    default_route: str | None = None


def load(path: Path, pooling: str | None = None, max_seq_length: int | None = None) -> ModelParts:
    """Read the model directory ``path`` in whichever layout it has.

    Args:
        path: A local directory.
        pooling: A pooling mode overriding the saved one (plain Hugging Face directories: ``"mean"``).
        max_seq_length: Truncate inputs to this many tokens (default: the saved or model limit).

    Raises:
        ModelLoadError: a file is missing or unreadable, or a module type is not supported (the
            message names the file).
    """
    if not (path / "modules.json").is_file():
        plain = Transformer.load(path, max_seq_length=max_seq_length)
        return ModelParts(plain, Pooling(plain.dim, pooling or "mean"))
    modules_file = path / "modules.json"
    entries = _module_entries(modules_file)
    if entries and _kind(entries[0]) == "Router":
        parts = _load_router(path, entries, pooling, max_seq_length)
    else:
        parts = _load_stack(path, entries, modules_file, pooling, max_seq_length)
    parts.prompts = load_prompts(path)
    return parts


def _kind(entry: dict[str, Any]) -> str:
    return str(entry.get("type", "")).rsplit(".", 1)[-1]


def _load_stack(
    path: Path,
    entries: list[dict[str, Any]],
    modules_file: Path,
    pooling: str | None,
    max_seq_length: int | None,
) -> ModelParts:
    """One stack of modules (``entries``, each with a ``path`` inside ``path``): input, pooling, layers."""
    input_module: Transformer | StaticEmbedding | None = None
    pooler: Pooling | None = None
    pooling_file = modules_file
    layers: list[nn.Module] = []
    for entry in entries:
        kind = _kind(entry)
        folder = path / entry["path"]
        if kind == "Transformer":
            settings = _optional_json(folder / "sentence_bert_config.json")
            check_sentence_bert_config(settings, folder)
            input_module = Transformer.load(
                folder,
                max_seq_length=max_seq_length or settings.get("max_seq_length"),
                do_lower_case=bool(settings.get("do_lower_case", False)),
            )
        elif kind == "StaticEmbedding":
            input_module = load_static_embedding(folder, max_seq_length)
        elif kind == "Pooling":
            pooling_file = folder / "config.json"
            pooler = Pooling.from_config(
                check_pooling_config(read_json(pooling_file), pooling_file), source=str(pooling_file)
            )
            if pooling is not None:
                pooler = Pooling(pooler.dim, pooling, include_prompt=pooler.include_prompt)
        elif kind == "Dense":
            layers.append(load_dense(folder))
        elif kind == "Normalize":
            layers.append(Normalize())
        else:
            where = "a Router must come first" if kind == "Router" else f"sbert reads {', '.join(SUPPORTED)}"
            raise ModelLoadError(
                f"{modules_file}: module type {entry.get('type')!r} is not supported ({where})"
            )
    if input_module is None:
        raise ModelLoadError(f"{modules_file}: lists no Transformer or StaticEmbedding module")
    pooler = _pooling(input_module, pooler, pooling, pooling_file)
    _check_dims(pooler, layers, modules_file)
    return ModelParts(input_module, pooler, layers)


def _load_router(
    path: Path, entries: list[dict[str, Any]], pooling: str | None, max_seq_length: int | None
) -> ModelParts:
    """sentence-transformers' Router: a stack per route (``router_config.json``), each followed
    by the modules listed after the Router in ``modules.json`` (as sentence-transformers runs them)."""
    folder = entries[0]["path"]
    config_file = path / folder / "router_config.json"
    if not config_file.is_file() and (path / folder / "config.json").is_file():
        config_file = path / folder / "config.json"  # sentence-transformers' older name (Asym)
    config = read_json(config_file)
    try:
        types, structure = dict(config["types"]), dict(config["structure"])
        parameters = dict(config.get("parameters", {}))
    except (KeyError, TypeError, ValueError) as error:
        raise ModelLoadError(
            f"{config_file}: expected 'types', 'structure' and 'parameters': {error}"
        ) from error
    if parameters.get("route_mappings"):
        raise ModelLoadError(
            f"{config_file}: route_mappings (routes by task and modality) are not read; sbert routes by task name"
        )
    routes = {}
    for name, ids in structure.items():
        stack = []
        for model_id in ids:
            # a folder beside router_config.json, nothing that leads elsewhere
            if (
                not isinstance(model_id, str)
                or model_id not in types
                or model_id in (".", "..")
                or not re.fullmatch(r"[\w.-]+", model_id)
            ):
                raise ModelLoadError(
                    f"{config_file}: route {name!r} lists {model_id!r}, which is not a module folder in 'types'"
                )
            stack.append({"type": types[model_id], "path": str(Path(folder, model_id))})
        routes[name] = _load_stack(path, stack + entries[1:], config_file, pooling, max_seq_length)
    if not routes:
        raise ModelLoadError(f"{config_file}: has no routes")
    default = parameters.get("default_route")
    if default is None and parameters.get("allow_empty_key", True):
        default = next(iter(routes))  # sentence-transformers' choice
    if default is not None and default not in routes:
        raise ModelLoadError(f"{config_file}: default_route {default!r} is not a route ({', '.join(routes)})")
    dims = {name: _output_dim(parts) for name, parts in routes.items()}
    if len(set(dims.values())) > 1:  # one model, one vector space: an index needs one size
        raise ModelLoadError(f"{config_file}: the routes give vectors of different sizes {dims}")
    own = routes[default or next(iter(routes))]
    return ModelParts(own.input_module, own.pooling, own.layers, routes=routes, default_route=default)


def _output_dim(parts: ModelParts) -> int:
    dim = parts.pooling.output_dim
    for layer in parts.layers:
        dim = getattr(layer, "out_features", dim)
    return dim


def _pooling(
    input_module: Transformer | StaticEmbedding, pooler: Pooling | None, mode: str | None, file: Path
) -> Pooling:
    """The pooling after ``input_module``: the saved one, else ``mode`` (default mean)."""
    if isinstance(input_module, StaticEmbedding):
        if pooler is not None or mode not in (None, "mean"):
            what = f"pooling {mode!r}" if pooler is None else "a Pooling module"
            raise ModelLoadError(
                f"{file}: a static model averages its token vectors; {what} is not available"
            )
        return Pooling(input_module.dim, "mean")  # what the module itself computes
    if pooler is None:
        return Pooling(input_module.dim, mode or "mean")
    if pooler.dim != input_module.dim:  # else it fails only at the first encode()
        raise ModelLoadError(
            f"{file}: word_embedding_dimension is {pooler.dim}, but the transformer's "
            f"vectors have {input_module.dim} dimensions"
        )
    return pooler


def _check_dims(pooler: Pooling, layers: list[nn.Module], modules_file: Path) -> None:
    dim = pooler.output_dim  # several pooling modes concatenate
    for layer in layers:
        if isinstance(layer, Dense):
            if layer.in_features != dim:
                raise ModelLoadError(
                    f"{modules_file}: a Dense layer takes {layer.in_features} dimensions, "
                    f"but the layer before it gives {dim}"
                )
            dim = layer.out_features


def load_static_embedding(folder: Path, max_seq_length: int | None = None) -> StaticEmbedding:
    """Read a ``StaticEmbedding`` folder; ``max_seq_length`` overrides the tokenizer's truncation."""
    tokenizer_file = folder / "tokenizer.json"
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception as error:
        raise ModelLoadError(f"{tokenizer_file}: cannot be read as a tokenizer: {error}") from error
    weights = _table(folder / "model.safetensors")
    check_finite_table(weights, folder / "model.safetensors", tokenizer)
    if weights.shape[0] < tokenizer.get_vocab_size():
        raise ModelLoadError(
            f"{folder / 'model.safetensors'}: {weights.shape[0]} token vectors for a vocabulary of "
            f"{tokenizer.get_vocab_size()} tokens"
        )
    limit = max_seq_length or (tokenizer.truncation or {}).get("max_length")
    check_max_seq_length(limit, None, str(folder))
    return StaticEmbedding(tokenizer, weights, max_seq_length=limit)


def _table(file: Path) -> torch.Tensor:
    """The (vocabulary, dim) table of ``file``: ``embedding.weight``, or model2vec's folded tensors."""
    try:
        state = load_file(str(file))
    except FileNotFoundError as error:
        raise ModelLoadError(f"{file}: missing (a static model keeps its token vectors there)") from error
    except Exception as error:
        raise ModelLoadError(f"{file}: cannot be loaded: {error}") from error
    if "embedding.weight" in state:
        return state["embedding.weight"].float()
    if "embeddings" not in state:
        raise ModelLoadError(
            f"{file}: has neither 'embedding.weight' nor 'embeddings' (holds {sorted(state)})"
        )
    table = state["embeddings"].float()
    if "mapping" in state:  # model2vec's vocabulary quantization: token id → row
        table = table[state["mapping"].long()]
    if "weights" in state:  # model2vec's per-token weights, folded in as the mean would apply them
        table = table * state["weights"].float()[:, None]
    return table.contiguous()


def _optional_json(path: Path) -> dict[str, Any]:
    return read_json(path) if path.is_file() else {}
