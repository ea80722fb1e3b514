"""The layers of a sentence encoder, in the order the paper describes them; each owns its format."""

# isort: off
# Defining a module class registers its type: imported in the order messages list what sbert reads.
from sbert.modules.transformer import Tokenized, Transformer
from sbert.modules.static_embedding import StaticEmbedding
from sbert.modules.pooling import POOLING_MODES, Pooling
from sbert.modules.dense import Dense
from sbert.modules.normalize import Normalize
from sbert.modules.router import Router
from sbert.modules.module import Module

# isort: on

__all__ = [
    "POOLING_MODES",
    "Dense",
    "Module",
    "Normalize",
    "Pooling",
    "Router",
    "StaticEmbedding",
    "Tokenized",
    "Transformer",
]
