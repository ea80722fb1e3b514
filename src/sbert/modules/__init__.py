"""The layers of a sentence encoder, in the order the paper describes them."""

from sbert.modules.dense import Dense
from sbert.modules.normalize import Normalize
from sbert.modules.pooling import POOLING_MODES, Pooling
from sbert.modules.static_embedding import StaticEmbedding
from sbert.modules.transformer import Tokenized, Transformer

__all__ = ["POOLING_MODES", "Dense", "Normalize", "Pooling", "StaticEmbedding", "Tokenized", "Transformer"]
