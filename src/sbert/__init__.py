"""sbert: Sentence-BERT sentence embeddings (Reimers & Gurevych, 2019).

The names below load on first use (PEP 562), so ``import sbert`` and ``sbert --help`` do not pay
for torch and transformers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name → the module that defines it.
_EXPORTS = {
    "DEFAULT_MODEL": "sbert.hub",
    "ModelLoadError": "sbert.errors",
    "SentenceEncoder": "sbert.encoder",
    "cosine_matrix": "sbert.similarity",
    "similarity_function": "sbert.similarity",
}

if TYPE_CHECKING:
    from sbert.encoder import SentenceEncoder
    from sbert.errors import ModelLoadError
    from sbert.hub import DEFAULT_MODEL
    from sbert.similarity import cosine_matrix, similarity_function

__all__ = [
    "DEFAULT_MODEL",
    "ModelLoadError",
    "SentenceEncoder",
    "__version__",
    "cosine_matrix",
    "similarity_function",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sbert' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
