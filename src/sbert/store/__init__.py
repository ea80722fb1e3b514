"""Embedding stores: a directory of Parquet shards and a ``manifest.json``, written by streaming a
corpus of any size through a model (locally or on a Ray cluster) and read in chunks or by row.

Any Arrow tool reads the shards (columns ``id`` int64, ``text`` string, ``embedding`` fixed-size list
of float32, float16 or int8); the manifest says which model made them and how.
"""

try:
    import pyarrow  # noqa: F401
except ImportError:  # pragma: no cover - depends on the installation
    raise ImportError("embedding stores need pyarrow: pip install 'sbert[store]'") from None

from sbert.store.corpus import CorpusOptions, encode_corpus
from sbert.store.manifest import ShardRecord, StoreError
from sbert.store.reader import EmbeddingStore, StoreBatch
from sbert.store.writer import StoreDiskFullError, StoreWriter

__all__ = [
    "CorpusOptions",
    "EmbeddingStore",
    "ShardRecord",
    "StoreBatch",
    "StoreDiskFullError",
    "StoreError",
    "StoreWriter",
    "encode_corpus",
]
