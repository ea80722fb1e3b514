"""sbert: Sentence-BERT sentence embeddings (Reimers & Gurevych, 2019).

The names below load on first use (PEP 562), so ``import sbert`` and ``sbert --help`` do not pay
for torch and transformers. sentence-transformers' names resolve to sbert's classes
(``SentenceTransformer`` is :class:`SentenceEncoder`), so its users change only the imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sbert._version import __version__

# Public name → the module that defines it.
_EXPORTS = {
    "CrossEncoder": "sbert.cross_encoder",
    "DEFAULT_MODEL": "sbert.model.hub",
    "ModelLoadError": "sbert.base.errors",
    "SentenceEncoder": "sbert.encoder.model",
    "SentenceTransformer": "sbert.encoder.model",
    "SparseEncoder": "sbert.sparse.model",
    "cosine_matrix": "sbert.embeddings.similarity",
    "similarity_function": "sbert.embeddings.similarity",
}
# Submodules reachable as attributes (``sbert.util.cos_sim`` after ``import sbert``).
_SUBMODULES = ("quantization", "util")

if TYPE_CHECKING:
    from sbert import quantization, util
    from sbert.base.errors import ModelLoadError
    from sbert.cross_encoder import CrossEncoder
    from sbert.embeddings.similarity import cosine_matrix, similarity_function
    from sbert.encoder.model import SentenceEncoder, SentenceTransformer
    from sbert.model.hub import DEFAULT_MODEL
    from sbert.sparse.model import SparseEncoder

__all__ = [
    "DEFAULT_MODEL",
    "CrossEncoder",
    "ModelLoadError",
    "SentenceEncoder",
    "SentenceTransformer",
    "SparseEncoder",
    "__version__",
    "cosine_matrix",
    "quantization",
    "similarity_function",
    "util",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"sbert.{name}")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sbert' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})
