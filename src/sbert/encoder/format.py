"""The on-disk model format, read and written: sentence-transformers' directory layout, safetensors only.

A model directory lists its modules in ``modules.json`` (type and folder of each, in order) and keeps
the model's settings in ``config_sentence_transformers.json`` (prompts, similarity function). Each
module reads and writes its own folder (:mod:`sbert.modules.module`); :mod:`sbert.model.folder` walks
the list and writes it, and this module composes what it read into what :class:`~sbert.SentenceEncoder` runs. Four layouts:

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
from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from sbert.base.errors import ModelLoadError
from sbert.model.folder import SETTINGS_FILE, load_prompts, read_modules, read_settings
from sbert.model.kinds import SPARSE_MODULES, refuse
from sbert.model.prompts import Prompts
from sbert.modules import Dense, Pooling, Router, StaticEmbedding, Transformer
from sbert.modules.router import sequence

__all__ = ["SETTINGS_FILE", "ModelParts", "load_prompts", "read_model"]


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
    _refuse_sparse_settings(path)
    loaded = read_modules(path, max_seq_length)
    if loaded is None:
        plain = Transformer.load_pretrained(path, max_seq_length=max_seq_length)
        return ModelParts(plain, Pooling(plain.dim, pooling or "mean"))
    if loaded and isinstance(loaded[0][0], Router):
        parts = _routed(loaded[0][0], loaded[1:], pooling)
    else:
        parts = _stack(loaded, path / "modules.json", pooling)
    parts.prompts = load_prompts(path)
    return parts


def _refuse_sparse_settings(path: Path) -> None:
    """A folder sentence-transformers saved as a SparseEncoder gives no dense vectors."""
    if read_settings(path).get("model_type") == "SparseEncoder":
        refuse("model_type is SparseEncoder", "sparse", path / SETTINGS_FILE)


def _refuse_sparse_module(module: nn.Module, listing: Path) -> None:
    """SPLADE's modules (an MLM transformer, SpladePooling, a static weight per token, a sparse
    autoencoder) make sparse vectors; pooled as a dense model they would be wrong."""
    if type(module).__name__ in SPARSE_MODULES:
        refuse(f"lists a {type(module).__name__} module", "sparse", listing)


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
