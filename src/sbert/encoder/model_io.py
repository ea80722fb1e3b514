"""The on-disk model format: sentence-transformers' directory layout, safetensors only.

A model directory holds the Hugging Face encoder at its root (``config.json``, ``model.safetensors``,
tokenizer files), ``modules.json`` listing the pipeline, ``sentence_bert_config.json``, and one
folder per later module (``1_Pooling``, ``2_Dense``, ``3_Normalize``); a static model has its token
table and ``tokenizer.json`` at the root instead. sentence-transformers loads what sbert writes;
:mod:`sbert.encoder.loading` reads it back without importing sentence-transformers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer
from torch import nn

from sbert._version import __version__
from sbert.base.errors import ModelLoadError
from sbert.base.files import replace_dir, staging_dir
from sbert.encoder.prompts import Prompts
from sbert.modules import Dense, Normalize, Pooling, StaticEmbedding, Transformer

_ST_TYPES = {
    "Transformer": "sentence_transformers.models.Transformer",
    "StaticEmbedding": "sentence_transformers.sentence_transformer.modules.static_embedding.StaticEmbedding",
    "Pooling": "sentence_transformers.models.Pooling",
    "Dense": "sentence_transformers.models.Dense",
    "Normalize": "sentence_transformers.models.Normalize",
    "Router": "sentence_transformers.models.Router",
}


def read_json(path: Path) -> Any:
    """Parse a JSON file; the error names the file and the position of a syntax error."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ModelLoadError(f"{path}: missing") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ModelLoadError(f"{path}: not valid JSON: {error}") from error


def load_prompts(path: Path) -> Prompts:
    """The prompts of a sentence-transformers directory (none for a plain Hugging Face one)."""
    config_file = path / "config_sentence_transformers.json"
    if not config_file.is_file():
        return Prompts()
    try:
        return Prompts.from_config(read_json(config_file), str(config_file))
    except ValueError as error:
        raise ModelLoadError(str(error)) from error


def _module_entries(modules_file: Path) -> list[dict[str, Any]]:
    """The entries of ``modules.json`` in ``idx`` order, each with a ``path`` inside the model directory."""
    entries = read_json(modules_file)
    if not isinstance(entries, list):
        raise ModelLoadError(
            f"{modules_file}: expected a list of modules (objects with idx, path and type), "
            f"got a JSON {type(entries).__name__}"
        )
    checked = []
    for position, entry in enumerate(entries):
        where = f"{modules_file}: entry {position}"
        if not isinstance(entry, dict):
            raise ModelLoadError(f"{where} is a JSON {type(entry).__name__}, expected an object")
        idx = entry.get("idx", position)
        if not re.fullmatch(r"[0-9]+", str(idx)):  # an int or a string of digits; not True, 1.5 or "a"
            raise ModelLoadError(f"{where}: idx {idx!r} is not a whole number")
        folder = entry.get("path", "")
        if not isinstance(folder, str):
            raise ModelLoadError(f"{where}: path {folder!r} is not a string")
        normal = os.path.normpath(folder.replace("\\", "/")) if folder else ""
        if os.path.isabs(normal) or normal == ".." or normal.startswith("../"):
            raise ModelLoadError(f"{where}: path {folder!r} leads outside the model directory")
        checked.append({**entry, "idx": int(idx), "path": folder})
    return sorted(checked, key=lambda e: e["idx"])


Stack = tuple[Transformer | StaticEmbedding, Pooling, list[nn.Module]]  # input module, pooling, layers


def save_modules(
    path: Path,
    input_module: Transformer | StaticEmbedding,
    pooling: Pooling,
    layers: list[nn.Module],
    prompts: Prompts | None = None,
) -> None:
    """Write a model directory atomically: built under a temporary name, then renamed into place.

    A static model is written in sentence-transformers' ``StaticEmbedding`` layout (the token table
    and ``tokenizer.json`` at the root, no Pooling module: it averages by itself).
    """
    _save(
        Path(path),
        lambda folder: _write_modules(folder, (input_module, pooling, layers), prompts or Prompts()),
    )


def save_router(path: Path, routes: dict[str, Stack], default_route: str | None, prompts: Prompts) -> None:
    """Write a sentence-transformers ``Router`` directory atomically: ``router_config.json`` and
    one folder per module of each route (``query_0_Transformer``, ``query_1_Pooling``...)."""

    def write(folder: Path) -> None:
        _write_config(folder, prompts)
        types: dict[str, str] = {}
        structure: dict[str, list[str]] = {}
        for name, stack in routes.items():
            structure[name] = []
            for position, module in enumerate(_stack_modules(*stack)):
                model_id = f"{name}_{position}_{type(module).__name__}"
                types[model_id] = _write_module(folder / model_id, module)
                structure[name].append(model_id)
        parameters: dict[str, Any] = {
            "default_route": default_route,
            "allow_empty_key": False,
            "route_mappings": {},
        }
        _write_json(
            folder / "router_config.json", {"types": types, "structure": structure, "parameters": parameters}
        )
        _write_json(
            folder / "modules.json", [{"idx": 0, "name": "0", "path": "", "type": _ST_TYPES["Router"]}]
        )

    _save(Path(path), write)


def _save(path: Path, write: Callable[[Path], None]) -> None:
    staging = staging_dir(path)
    try:
        write(staging)
        replace_dir(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_config(folder: Path, prompts: Prompts) -> None:
    _write_json(
        folder / "config_sentence_transformers.json",
        {"__version__": {"sbert": __version__}, **prompts.config(), "similarity_fn_name": "cosine"},
    )


def _stack_modules(
    input_module: Transformer | StaticEmbedding, pooling: Pooling, layers: list[nn.Module]
) -> list[nn.Module]:
    """The modules sentence-transformers lists for a stack (a static table pools by itself: no Pooling)."""
    return [input_module, *([] if isinstance(input_module, StaticEmbedding) else [pooling]), *layers]


def _write_modules(folder: Path, stack: Stack, prompts: Prompts) -> None:
    _write_config(folder, prompts)
    modules = []
    for idx, module in enumerate(_stack_modules(*stack)):
        sub = "" if idx == 0 else f"{idx}_{type(module).__name__}"  # the input module at the root
        modules.append(
            {"idx": idx, "name": str(idx), "path": sub, "type": _write_module(folder / sub, module)}
        )
    _write_json(folder / "modules.json", modules)


def _write_module(folder: Path, module: nn.Module) -> str:
    """Write one module into ``folder`` (made if missing); its sentence-transformers type."""
    folder.mkdir(parents=True, exist_ok=True)
    kind = type(module).__name__
    if isinstance(module, Transformer):
        _write_transformer(folder, module)
    elif isinstance(module, StaticEmbedding):
        _write_static(folder, module)
    elif isinstance(module, Pooling):
        _write_json(folder / "config.json", module.config())
    elif isinstance(module, Dense):
        _write_json(folder / "config.json", module.config())
        state = {k: v.detach().contiguous().cpu() for k, v in module.state_dict().items()}
        save_file(state, str(folder / "model.safetensors"))
    elif not isinstance(module, Normalize):
        raise TypeError(f"cannot save layer {kind}: sbert saves Dense and Normalize layers")
    return _ST_TYPES[kind]


def _write_transformer(folder: Path, transformer: Transformer) -> None:
    transformer.save(folder)
    _write_json(
        folder / "sentence_bert_config.json",
        {"max_seq_length": transformer.max_seq_length, "do_lower_case": transformer.do_lower_case},
    )


def _write_static(folder: Path, static: StaticEmbedding) -> None:
    weight = static.embedding.weight.detach().cpu().contiguous()
    save_file({"embedding.weight": weight}, str(folder / "model.safetensors"))
    tokenizer = Tokenizer.from_str(static.tokenizer.to_str())
    if static.limit is not None:  # sentence-transformers truncates as the tokenizer says
        tokenizer.enable_truncation(static.limit)
    tokenizer.save(str(folder / "tokenizer.json"))


def load_dense(folder: Path) -> Dense:
    dense = Dense.from_config(read_json(folder / "config.json"))
    weights = folder / "model.safetensors"
    try:
        if weights.is_file():
            state = load_file(str(weights))
        else:
            weights = folder / "pytorch_model.bin"
            # weights_only=True loads tensors and refuses any pickled code.
            state = torch.load(weights, map_location="cpu", weights_only=True)
        dense.load_state_dict(state)
    except FileNotFoundError as error:
        raise ModelLoadError(f"{folder}: the Dense layer has no model.safetensors") from error
    except Exception as error:
        raise ModelLoadError(f"{weights}: cannot be loaded: {error}") from error
    return dense


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
