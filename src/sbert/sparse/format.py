"""A sparse encoder's folder, read and written: sentence-transformers 6.2's ``SparseEncoder`` layout.

Three kinds of model, as sentence-transformers composes them:

- SPLADE: an MLM transformer (``Transformer`` with ``transformer_task: fill-mask``, or 5.x's
  ``MLMTransformer``) then ``SpladePooling``; a plain Hugging Face ``*ForMaskedLM`` folder (no
  ``modules.json``) is read as that, with max pooling;
- inference-free SPLADE: a ``Router`` whose query route is a ``SparseStaticEmbedding`` and whose
  document route is SPLADE;
- CSR: a dense stack (Transformer, Pooling) then a ``SparseAutoEncoder``.

The modules read and write their own folders (:mod:`sbert.modules`); this module walks
``modules.json`` (:func:`~sbert.modules.module.read_modules_json`), checks the composition and
refuses what is not a sparse model, naming the file. Writing is the dense writer's
(:func:`~sbert.encoder.format.write_model`) with sentence-transformers' sparse settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from torch import nn

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.encoder.format import SETTINGS_FILE, load_prompts, write_model
from sbert.encoder.prompts import Prompts
from sbert.encoder.st_surface import LoadsByName
from sbert.modules import (
    MLMTransformer,
    Pooling,
    Router,
    SparseAutoEncoder,
    SparseStaticEmbedding,
    SpladePooling,
    Transformer,
)
from sbert.modules.module import load_module, module_class, read_modules_json

SparseInput = MLMTransformer | Transformer | SparseStaticEmbedding
SparsePooling = SpladePooling | Pooling


@dataclass
class SparseParts:
    """One stack (input module, its pooling, layers after it) or a Router of such stacks, with the
    settings of ``config_sentence_transformers.json``."""

    input_module: SparseInput | Router
    pooling: SparsePooling | None = None
    layers: list[nn.Module] = field(default_factory=list)
    prompts: Prompts = field(default_factory=Prompts)
    max_active_dims: int | None = None
    similarity_fn_name: str | None = None


def read_sparse_model(path: Path, max_seq_length: int | None = None) -> SparseParts:
    """Read the sparse model directory ``path``.

    Raises:
        ModelLoadError: naming the file: a dense model (no MLM head, no sparse modules), an MLM
            folder without its head's weights, a module sbert does not read, or a stack out of order.
    """
    modules_file = path / "modules.json"
    if not modules_file.is_file():
        parts = SparseParts(*_plain(path, max_seq_length))
    else:
        loaded = []
        for position, entry in enumerate(read_modules_json(modules_file)):
            if position > 0 and module_class(str(entry.get("type", ""))) is Router:
                raise ModelLoadError(f"{modules_file}: a Router must be the first module")
            loaded.append(
                load_module(
                    entry.get("type"), path / entry["path"], modules_file, max_seq_length=max_seq_length
                )
            )
        if loaded and isinstance(loaded[0], Router):
            parts = _routed(loaded[0], loaded[1:], modules_file)
        else:
            parts = SparseParts(*split_stack(loaded, modules_file))
    settings = read_json(path / SETTINGS_FILE) if (path / SETTINGS_FILE).is_file() else {}
    parts.prompts = load_prompts(path)
    parts.max_active_dims = settings.get("max_active_dims")
    name = settings.get("similarity_fn_name")
    parts.similarity_fn_name = name if isinstance(name, str) else None
    return parts


def _plain(path: Path, max_seq_length: int | None) -> tuple[MLMTransformer, SpladePooling]:
    """A Hugging Face folder: a ``*ForMaskedLM`` is SPLADE with max pooling (sentence-transformers'
    reading); anything else is refused (sentence-transformers would put an untrained autoencoder
    on it, whose vectors mean nothing)."""
    config_file = path / "config.json"
    if not config_file.is_file():
        held = "it is empty" if not any(path.iterdir()) else "it has neither"
        raise ModelLoadError(
            f"{config_file}: missing ({held}): a SparseEncoder folder needs modules.json (saved by "
            "sentence-transformers or sbert) or a Hugging Face *ForMaskedLM model's config.json"
        )
    config = read_json(config_file)
    architectures = config.get("architectures") or []
    if not any(str(name).endswith("ForMaskedLM") for name in architectures):
        raise ModelLoadError(
            f"{config_file}: not a SPLADE model: its architectures are {architectures or 'not named'}, "
            "not a *ForMaskedLM with its head. SparseEncoder loads masked-language models and "
            "sentence-transformers SparseEncoder folders; for dense vectors use sbert.SentenceEncoder."
        )
    mlm = MLMTransformer.load_pretrained(path, max_seq_length=max_seq_length)
    assert isinstance(mlm, MLMTransformer)  # load_pretrained builds the class it is called on
    return mlm, SpladePooling("max", "relu", embedding_dimension=mlm.dim)


def split_stack(
    modules: Sequence[nn.Module], listing: Path
) -> tuple[SparseInput, SparsePooling | None, list[nn.Module]]:
    """A stack's input module, its pooling and the layers after it, checked to make sparse vectors.

    Raises:
        ModelLoadError: naming ``listing``: no input module, an MLM transformer without
            SpladePooling, or a dense stack without a SparseAutoEncoder.
    """
    if not modules or not isinstance(modules[0], Transformer | SparseStaticEmbedding):
        raise ModelLoadError(f"{listing}: lists no Transformer or SparseStaticEmbedding module first")
    first, rest = modules[0], list(modules[1:])
    pooling = rest.pop(0) if rest and isinstance(rest[0], SpladePooling | Pooling) else None
    if isinstance(first, SparseStaticEmbedding):
        if pooling is not None or rest:
            raise ModelLoadError(
                f"{listing}: a SparseStaticEmbedding makes the vectors itself; nothing may follow it"
            )
        return first, None, []
    if isinstance(first, MLMTransformer):
        if not isinstance(pooling, SpladePooling) or rest:
            raise ModelLoadError(
                f"{listing}: an MLM transformer (fill-mask) must be followed by SpladePooling alone, "
                f"got {[type(module).__name__ for module in modules[1:]]}"
            )
        if pooling.embedding_dimension is None:
            pooling.embedding_dimension = first.dim
        return first, pooling, []
    if not isinstance(pooling, Pooling) or [type(layer) for layer in rest] != [SparseAutoEncoder]:
        raise ModelLoadError(
            f"{listing}: a dense model (a feature-extraction Transformer, "
            f"{', '.join(type(module).__name__ for module in modules[1:]) or 'nothing'} after it), not a "
            "sparse one: SparseEncoder reads SPLADE (a fill-mask Transformer and SpladePooling), "
            "inference-free SPLADE (a Router) and CSR (Transformer, Pooling, SparseAutoEncoder). "
            "For dense vectors use sbert.SentenceEncoder."
        )
    if rest[0].input_dim != pooling.output_dim:
        raise ModelLoadError(
            f"{listing}: the SparseAutoEncoder takes {rest[0].input_dim} dimensions, but the pooling gives {pooling.output_dim}"
        )
    return first, pooling, rest


def _routed(router: Router, after: Sequence[nn.Module], listing: Path) -> SparseParts:
    """Each route's stack (followed by the modules after the Router), checked; routes of one width."""
    where = router.source or listing
    stacks = {name: split_stack([*router.modules_of(name), *after], where) for name in router.route_names}
    dims = {name: stack_dim(*stack) for name, stack in stacks.items()}
    if len(set(dims.values())) > 1:
        raise ModelLoadError(f"{where}: the routes give vectors of different sizes {dims}")
    routes = {name: _sequence(*stack) for name, stack in stacks.items()}
    composed = Router(routes, router.default_route)
    composed.source, composed.folders = router.source, router.folders
    return SparseParts(composed)


def _sequence(first: nn.Module, pooling: nn.Module | None, layers: list[nn.Module]) -> list[nn.Module]:
    return [first, *([pooling] if pooling is not None else []), *layers]


def stack_dim(first: SparseInput, pooling: SparsePooling | None, layers: Sequence[nn.Module]) -> int:
    """The width of a stack's vectors: the vocabulary (SPLADE, static) or the autoencoder's."""
    if layers:
        return int(cast(Any, layers[-1]).out_features)
    return int(first.dim)


def write_sparse_model(
    path: Path,
    modules: Sequence[nn.Module],
    prompts: Prompts,
    similarity_fn_name: str,
    max_active_dims: int | None,
) -> None:
    """Write the model as sentence-transformers' SparseEncoder saves it (``model_type``,
    ``similarity_fn_name``, ``max_active_dims`` where set)."""
    settings: dict[str, Any] = {"model_type": "SparseEncoder", "similarity_fn_name": similarity_fn_name}
    if max_active_dims is not None:
        settings["max_active_dims"] = max_active_dims
    write_model(path, modules, prompts, settings=settings)


_SPARSE_TYPES = ("MLMTransformer", "SpladePooling", "SparseStaticEmbedding", "SparseAutoEncoder")


def is_sparse_folder(path: Path) -> bool:
    """Whether the local model folder ``path`` is one sentence-transformers saved as a SparseEncoder
    (its ``model_type``, else a sparse module in ``modules.json`` or a Router's config), without
    loading it: what a command or a server asks to pick :class:`~sbert.SparseEncoder` or
    :class:`~sbert.SentenceEncoder`. A plain ``*ForMaskedLM`` folder says nothing (BERT itself is
    one) and counts as dense.
    """
    settings = read_json(path / SETTINGS_FILE, or_none=True)
    if isinstance(settings, dict) and settings.get("model_type") == "SparseEncoder":
        return True
    listed = [path / "modules.json", *path.glob("*/router_config.json"), path / "router_config.json"]
    texts = [file.read_text(encoding="utf-8", errors="replace") for file in listed if file.is_file()]
    return any(kind in text for text in texts for kind in _SPARSE_TYPES)


class LoadsSparseByName(LoadsByName):
    """sentence-transformers' constructor: ``SparseEncoder("name or path", device=...,
    similarity_fn_name=..., max_active_dims=...)`` loads; ``SparseEncoder(modules=[...])`` composes
    sbert's modules."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else kwargs.get("model_name_or_path")
        similarity = kwargs.pop("similarity_fn_name", None)
        if isinstance(first, str | Path):
            model = super().__call__(*args, **kwargs)
        elif not args and "modules" in kwargs:
            first, *rest = kwargs.pop("modules")
            device = kwargs.pop("device", None)
            model = super().__call__(first, None, rest, **kwargs)
            model = model.to(device) if device is not None else model
        else:
            model = super().__call__(*args, **kwargs)
        if similarity is not None:
            model.similarity_fn_name = similarity
        return model
