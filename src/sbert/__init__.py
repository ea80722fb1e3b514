"""sbert: Sentence-BERT sentence embeddings (Reimers & Gurevych, 2019)."""

__version__ = "0.1.0"

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
