"""A model built from a name or path, as sentence-transformers' constructors build every kind:
``SentenceTransformer("name", device=...)`` and ``SparseEncoder("name", ...)`` load as ``from_pretrained`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sbert.model.prompts import Prompts

# The backends of sentence-transformers' constructor that sbert runs (and sbert's "auto").
ST_BACKENDS = ("torch", "openvino", "auto")


class LoadsByName(type):
    """``SentenceEncoder("name or path", device=...)`` loads, as ``SentenceTransformer(...)`` does."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else kwargs.get("model_name_or_path")
        if isinstance(first, str | Path):
            kwargs.pop("model_name_or_path", None)
            return load_as_sentence_transformer(cls, first, *args[1:], **kwargs)
        return super().__call__(*args, **kwargs)


def load_as_sentence_transformer(
    cls: Any,
    name_or_path: str | Path | None,
    device: str | None = None,
    prompts: Mapping[str, str] | None = None,
    default_prompt_name: str | None = None,
    truncate_dim: int | None = None,
    backend: str = "auto",
    model_kwargs: Mapping[str, Any] | None = None,
    **sbert_options: Any,
) -> Any:
    """``SentenceTransformer(name_or_path, device=..., ...)``: :meth:`from_pretrained`, then the
    constructor's prompts and ``truncate_dim`` (sentence-transformers' meaning).

    Raises:
        ValueError: ``backend="onnx"``, a ``model_kwargs`` key, or a ``default_prompt_name`` not
            among the prompts.
    """
    if backend not in ST_BACKENDS:
        raise ValueError(f"backend={backend!r}: sbert runs on torch or openvino (or auto), not {backend}")
    if model_kwargs:
        raise ValueError(
            f"model_kwargs {sorted(model_kwargs)} are not available in sbert: it loads float32 weights "
            "and picks its compute precision with precision= (from_pretrained) or compute_precision= (encode)"
        )
    model = cls.from_pretrained(name_or_path, device=device, backend=backend, **sbert_options)
    if prompts is not None or default_prompt_name is not None:
        named = {**model.prompts.named, **(prompts or {})}
        model.prompts = Prompts(named, default_prompt_name or model.prompts.default_name)
    model.truncate_dim = truncate_dim
    return model
