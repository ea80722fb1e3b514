"""Vector indexes on FAISS, from exact search in memory to compressed indexes of tens of millions.

- :mod:`~sbert.index.kinds`: the kinds, their memory formulas and ``kind="auto"``;
- :mod:`~sbert.index.vector_index`: :class:`VectorIndex` (build, search, save, load);
- :mod:`~sbert.index.options`: :class:`IndexOptions`, how both builders build;
- :mod:`~sbert.index.building`: building from an embedding store in bounded memory;
- :mod:`~sbert.index.files`: the directory's files and their checks;
- :mod:`~sbert.index.sparse_index`: :class:`SparseIndex`, sparse vectors (SPLADE), exact or Seismic;
- :mod:`~sbert.index.hybrid`: dense and sparse results fused (reciprocal rank, weighted sum).
"""

from sbert.index.files import (
    CORPUS_FILE,
    FAISS_FILE,
    IDS_FILE,
    MANIFEST_FILE,
    RESCORE_FILE,
    IndexLoadError,
    read_manifest,
)
from sbert.index.hybrid import HybridIndex, fuse, reciprocal_rank_fusion, weighted_fusion
from sbert.index.kinds import (
    COMPRESSED_KINDS,
    INDEX_KINDS,
    Choice,
    choose_kind,
    default_params,
    memory_bytes,
    parse_bytes,
)
from sbert.index.options import IndexOptions
from sbert.index.recall import recall_at_k
from sbert.index.sparse_index import SparseIndex
from sbert.index.vector_index import METRICS, VectorIndex

__all__ = [
    "COMPRESSED_KINDS",
    "CORPUS_FILE",
    "FAISS_FILE",
    "IDS_FILE",
    "INDEX_KINDS",
    "MANIFEST_FILE",
    "METRICS",
    "RESCORE_FILE",
    "Choice",
    "HybridIndex",
    "IndexLoadError",
    "IndexOptions",
    "SparseIndex",
    "VectorIndex",
    "choose_kind",
    "default_params",
    "fuse",
    "memory_bytes",
    "parse_bytes",
    "read_manifest",
    "recall_at_k",
    "reciprocal_rank_fusion",
    "weighted_fusion",
]
