"""The on-disk model format, read and written: sentence-transformers' directory layout, safetensors only.

A model directory lists its modules in ``modules.json`` (type and folder of each, in order) and keeps
the model's settings in ``config_sentence_transformers.json`` (prompts, similarity function). Each
module reads and writes its own folder (:mod:`sbert.modules.module`); this module walks the list
and composes what it read into what :class:`~sbert.SentenceEncoder` runs. Four layouts:

- a plain Hugging Face directory (no ``modules.json``): the encoder, then ``pooling`` (default ``"mean"``);
- a sentence-transformers stack: Transformer, Pooling, then Dense and Normalize layers (the input
  module at the root, ``1_Pooling``, ``2_Dense``...);
- sentence-transformers' ``StaticEmbedding`` layout: a token table and ``tokenizer.json`` at the
  root, which pools by itself, optionally followed by Normalize;
- sentence-transformers 5's ``Router``: one such stack per route, in the folders
  ``router_config.json`` names, followed by the modules listed after the Router.

sbert reads them without importing sentence-transformers, and sentence-transformers loads what sbert
writes. Nothing here imports the encoder: it composes what this module returns.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from sbert._version import __version__
from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json, replace_dir, staging_dir
from sbert.base.outputs import MODEL, claiming
from sbert.encoder.prompts import Prompts
from sbert.modules import (
    Dense,
    MLMTransformer,
    Pooling,
    Router,
    SparseAutoEncoder,
    SparseStaticEmbedding,
    SpladePooling,
    StaticEmbedding,
    Transformer,
)
from sbert.modules.module import load_module, module_class, read_modules_json, save_module, write_json
from sbert.modules.router import sequence

SETTINGS_FILE = "config_sentence_transformers.json"


@dataclass
class ModelParts:
    """What a directory holds, ready for :class:`~sbert.SentenceEncoder` to compose: an input module,
    its pooling and the layers after it, or a Router (whose routes hold them; no pooling, no layers)."""

    input_module: Transformer | StaticEmbedding | Router
    pooling: Pooling | None = None
    layers: list[nn.Module] = field(default_factory=list)
    prompts: Prompts = field(default_factory=Prompts)


def read_model(path: Path, pooling: str | None = None, max_seq_length: int | None = None) -> ModelParts:
    """Read the model directory ``path`` in whichever layout it has.

    Args:
        path: A local directory.
        pooling: A pooling mode overriding the saved one (plain Hugging Face directories: ``"mean"``).
        max_seq_length: Truncate inputs to this many tokens (default: the saved or model limit).

    Raises:
        ModelLoadError: a file is missing or unreadable, or a module type is not supported (the
            message names the file).
    """
    modules_file = path / "modules.json"
    _refuse_sparse_settings(path)
    if not modules_file.is_file():
        plain = Transformer.load_pretrained(path, max_seq_length=max_seq_length)
        return ModelParts(plain, Pooling(plain.dim, pooling or "mean"))
    loaded: list[tuple[nn.Module, Path]] = []
    for position, entry in enumerate(read_modules_json(modules_file)):
        folder = path / entry["path"]
        if position > 0 and module_class(str(entry.get("type", ""))) is Router:
            raise ModelLoadError(
                f"{modules_file}: module type {entry.get('type')!r} is not supported (a Router must come first)"
            )
        module = load_module(entry.get("type"), folder, modules_file, max_seq_length=max_seq_length)
        loaded.append((module, folder))
    if loaded and isinstance(loaded[0][0], Router):
        parts = _routed(loaded[0][0], loaded[1:], pooling)
    else:
        parts = _stack(loaded, modules_file, pooling)
    parts.prompts = load_prompts(path)
    return parts


SPARSE_HINT = "it makes sparse vectors: load it with sbert.SparseEncoder.from_pretrained"


def _refuse_sparse_settings(path: Path) -> None:
    """A folder sentence-transformers saved as a SparseEncoder gives no dense vectors."""
    config_file = path / SETTINGS_FILE
    if config_file.is_file() and read_json(config_file).get("model_type") == "SparseEncoder":
        raise ModelLoadError(f"{config_file}: model_type is SparseEncoder: {SPARSE_HINT}")


def _refuse_sparse_module(module: nn.Module, listing: Path) -> None:
    """SPLADE's modules (an MLM transformer, SpladePooling, a static weight per token, a sparse
    autoencoder) make sparse vectors; pooled as a dense model they would be wrong."""
    if isinstance(module, MLMTransformer | SpladePooling | SparseStaticEmbedding | SparseAutoEncoder):
        raise ModelLoadError(f"{listing}: lists a {type(module).__name__} module: {SPARSE_HINT}")


def load_prompts(path: Path) -> Prompts:
    """The prompts of a sentence-transformers directory (none for a plain Hugging Face one)."""
    config_file = path / SETTINGS_FILE
    if not config_file.is_file():
        return Prompts()
    try:
        return Prompts.from_config(read_json(config_file), str(config_file))
    except ValueError as error:
        raise ModelLoadError(str(error)) from error


def _stack(loaded: list[tuple[nn.Module, Path]], listing: Path, pooling: str | None) -> ModelParts:
    """One stack of modules (as ``listing`` names them): the input module, its pooling, the layers."""
    input_module: Transformer | StaticEmbedding | None = None
    pooler: Pooling | None = None
    pooling_file = listing
    layers: list[nn.Module] = []
    for module, folder in loaded:
        _refuse_sparse_module(module, listing)
        if isinstance(module, Transformer | StaticEmbedding):
            input_module = module
        elif isinstance(module, Pooling):
            pooling_file = folder / Pooling.config_file_name
            pooler = module
            if pooling is not None:
                pooler = Pooling(pooler.dim, pooling, include_prompt=pooler.include_prompt)
        else:
            layers.append(module)
    if input_module is None:
        raise ModelLoadError(f"{listing}: lists no Transformer or StaticEmbedding module")
    pooler = _pooling(input_module, pooler, pooling, pooling_file)
    _check_dims(pooler, layers, listing)
    return ModelParts(input_module, pooler, layers)


def _routed(router: Router, after: list[tuple[nn.Module, Path]], pooling: str | None) -> ModelParts:
    """sentence-transformers' Router: each route's stack followed by the modules listed after the
    Router in ``modules.json`` (as sentence-transformers runs them), checked and composed."""
    config_file = router.source or Path(Router.config_file_name)
    routes = {}
    for name in router.route_names:
        modules = router.modules_of(name)
        folders = router.folders.get(name) or [config_file.parent] * len(modules)
        # each route its own copy of the modules after the Router, as if read once per route
        parts = _stack([*zip(modules, folders), *copy.deepcopy(after)], config_file, pooling)
        routes[name] = parts
    dims = {name: _output_dim(parts) for name, parts in routes.items()}
    if len(set(dims.values())) > 1:  # one model, one vector space: an index needs one size
        raise ModelLoadError(f"{config_file}: the routes give vectors of different sizes {dims}")
    stacks = {name: sequence(p.input_module, p.pooling, p.layers) for name, p in routes.items()}
    composed = Router(stacks, router.default_route)
    composed.source, composed.folders = router.source, router.folders
    return ModelParts(composed)


def _output_dim(parts: ModelParts) -> int:
    dim = parts.pooling.output_dim if parts.pooling is not None else 0
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


@claiming("path", MODEL)  # a file, a link, or a folder with files sbert did not write: refused first
def write_model(
    path: Path,
    modules: Sequence[nn.Module],
    prompts: Prompts | None = None,
    settings: Mapping[str, Any] | None = None,
) -> None:
    """Write a model directory atomically (built under a temporary name, then swapped into place):
    the settings, then each module in its folder (the first at the root, then ``1_Pooling``...) and
    ``modules.json`` listing them. ``settings`` go into ``config_sentence_transformers.json`` over
    the dense defaults (a sparse encoder's ``model_type``, ``similarity_fn_name``...).

    Raises:
        TypeError: a module sbert could not read back (not a registered module type).
        OutputRefusedError: ``path`` is a file, a link, or a folder holding anything sbert did not
            write (:mod:`sbert.base.outputs`); nothing was written.
    """
    staging = staging_dir(path)
    try:
        saved = {"__version__": {"sbert": __version__}, **(prompts or Prompts()).config()}
        written = {**saved, "similarity_fn_name": "cosine", **(settings or {})}
        write_json(staging / SETTINGS_FILE, written)
        entries = []
        for idx, module in enumerate(modules):
            sub = "" if idx == 0 else f"{idx}_{type(module).__name__}"  # the first module at the root
            entries.append(
                {"idx": idx, "name": str(idx), "path": sub, "type": save_module(module, staging / sub)}
            )
        write_json(staging / "modules.json", entries)
        replace_dir(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
