"""The on-disk static model: sentence-transformers' ``StaticEmbedding`` layout, safetensors only.

The directory holds ``modules.json`` (a ``StaticEmbedding`` at the root, optionally a Normalize
after it), ``model.safetensors`` with one tensor ``embedding.weight`` (vocabulary, dim),
``tokenizer.json`` (its truncation, if any, is the model's ``max_seq_length``), and
``config_sentence_transformers.json``. sentence-transformers 6 writes and reads the same; model2vec's
``embeddings`` (with an optional ``mapping`` and per-token ``weights``) are read too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer

from sbert import __version__
from sbert.errors import ModelLoadError
from sbert.files import replace_dir, staging_dir
from sbert.model_checks import check_finite_table, check_max_seq_length
from sbert.model_io import _module_entries, load_prompts, read_json
from sbert.static.encoder import StaticEncoder

STATIC_TYPE = "sentence_transformers.sentence_transformer.modules.static_embedding.StaticEmbedding"
NORMALIZE_TYPE = "sentence_transformers.models.Normalize"


def is_static(path: Path) -> bool:
    """Whether the model directory ``path`` holds a static model (its first module is a ``StaticEmbedding``)."""
    modules = path / "modules.json"
    if not modules.is_file():
        return False
    entries = _module_entries(modules)
    return bool(entries) and str(entries[0].get("type", "")).endswith("StaticEmbedding")


def load_static(path: Path, name: str, max_seq_length: int | None = None) -> StaticEncoder:
    """Read a static model directory; ``max_seq_length`` overrides the tokenizer's truncation."""
    modules_file = path / "modules.json"
    entries = _module_entries(modules_file)
    normalize = False
    for entry in entries[1:]:
        if str(entry.get("type", "")).endswith("Normalize"):
            normalize = True
        else:
            raise ModelLoadError(
                f"{modules_file}: module type {entry.get('type')!r} after a StaticEmbedding is not "
                "supported (sbert reads StaticEmbedding, then optionally Normalize)"
            )
    folder = path / entries[0]["path"]
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
    check_max_seq_length(limit, None, str(path))
    model = StaticEncoder(tokenizer, weights, max_seq_length=limit, normalize=normalize, name=name)
    model.prompts = load_prompts(path)
    return model


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


def save_static(model: StaticEncoder, path: Path) -> None:
    """Write ``model`` atomically: built under a temporary name, then renamed into place."""
    staging = staging_dir(path)
    try:
        save_file(
            {"embedding.weight": model.embedding.weight.detach().cpu().contiguous()},
            str(staging / "model.safetensors"),
        )
        tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
        if model.limit is not None:  # sentence-transformers truncates as the tokenizer says
            tokenizer.enable_truncation(model.limit)
        tokenizer.save(str(staging / "tokenizer.json"))
        modules: list[dict[str, Any]] = [{"idx": 0, "name": "0", "path": "", "type": STATIC_TYPE}]
        if model.layers:
            (staging / "1_Normalize").mkdir()
            modules.append({"idx": 1, "name": "1", "path": "1_Normalize", "type": NORMALIZE_TYPE})
        _write_json(staging / "modules.json", modules)
        _write_json(
            staging / "config_sentence_transformers.json",
            {
                "__version__": {"sbert": __version__},
                **model.prompts.config(),
                "similarity_fn_name": "cosine",
            },
        )
        replace_dir(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_metadata(path: Path) -> dict[str, Any]:
    """The distillation record ``distill.json`` beside a static model, or ``{}``."""
    file = path / "distill.json"
    return dict(read_json(file)) if file.is_file() else {}
