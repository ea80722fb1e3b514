"""The layers of a sentence encoder, in the order the paper describes them; each owns its format."""

# isort: off
# Defining a module class registers its type: imported in the order messages list what sbert reads.
from sbert.modules.transformer import Tokenized, Transformer
from sbert.modules.static_embedding import StaticEmbedding
from sbert.modules.pooling import POOLING_MODES, Pooling
from sbert.modules.dense import Dense
from sbert.modules.normalize import Normalize
from sbert.modules.router import Router
from sbert.modules.mlm_transformer import MLMTransformer
from sbert.modules.splade_pooling import SpladePooling
from sbert.modules.sparse_static_embedding import SparseStaticEmbedding
from sbert.modules.sparse_auto_encoder import SparseAutoEncoder
from sbert.modules.module import Module

# isort: on

__all__ = [
    "POOLING_MODES",
    "Dense",
    "MLMTransformer",
    "Module",
    "Normalize",
    "Pooling",
    "Router",
    "SparseAutoEncoder",
    "SparseStaticEmbedding",
    "SpladePooling",
    "StaticEmbedding",
    "Tokenized",
    "Transformer",
]
