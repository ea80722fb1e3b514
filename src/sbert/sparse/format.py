"""A sparse encoder's folder, read and written: sentence-transformers 6.2's ``SparseEncoder`` layout.

Three kinds of model, as sentence-transformers composes them:

- SPLADE: an MLM transformer (``Transformer`` with ``transformer_task: fill-mask``, or 5.x's
  ``MLMTransformer``) then ``SpladePooling``; a plain Hugging Face ``*ForMaskedLM`` folder (no
  ``modules.json``) is read as that, with max pooling;
- inference-free SPLADE: a ``Router`` whose query route is a ``SparseStaticEmbedding`` and whose
  document route is SPLADE;
- CSR: a dense stack (Transformer, Pooling) then a ``SparseAutoEncoder``.

The modules read and write their own folders (:mod:`sbert.modules`); this module walks
``modules.json`` (:func:`~sbert.model.folder.read_modules`), checks the composition and
refuses what is not a sparse model, naming the file. Writing is every kind's writer
(:func:`~sbert.model.folder.write_model`) with sentence-transformers' sparse settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from torch import nn

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.model.by_name import LoadsByName
from sbert.model.folder import load_prompts, read_modules, read_settings, write_model
from sbert.model.kinds import KINDS, folder_kind
from sbert.model.prompts import Prompts
from sbert.modules import (
    MLMTransformer,
    Pooling,
    Router,
    SparseAutoEncoder,
    SparseStaticEmbedding,
    SpladePooling,
    Transformer,
)

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
    loaded = read_modules(path, max_seq_length)
    modules_file = path / "modules.json"
    if loaded is None:
        parts = SparseParts(*_plain(path, max_seq_length))
    elif loaded and isinstance(loaded[0][0], Router):
        parts = _routed(loaded[0][0], [module for module, _ in loaded[1:]], modules_file)
    else:
        parts = SparseParts(*split_stack([module for module, _ in loaded], modules_file))
    settings = read_settings(path)
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
            f"sentence-transformers SparseEncoder folders; {folder_kind(path).hint()}"
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
            "inference-free SPLADE (a Router) and CSR (Transformer, Pooling, SparseAutoEncoder); "
            f"{KINDS['dense'].hint()}"
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


def is_sparse_folder(path: Path) -> bool:
    """Whether the local model folder ``path`` is one sentence-transformers saved as a SparseEncoder
    (:func:`sbert.model.kinds.folder_kind`), without loading it: what a command or a server asks to
    pick :class:`~sbert.SparseEncoder` or :class:`~sbert.SentenceEncoder`. A plain ``*ForMaskedLM``
    folder says nothing (BERT itself is one) and counts as dense.
    """
    return folder_kind(path).name == "sparse"


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
