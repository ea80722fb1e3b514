"""The index kinds: what each FAISS structure costs in memory, its defaults, and ``kind="auto"``.

Float kinds keep every vector in memory (``flat`` exact, ``hnsw`` graph, ``ivf`` inverted lists).
Compressed kinds keep a few bytes a vector and re-rank their candidates with vectors read from a
memory-mapped file on disk (:mod:`sbert.index.rescoring`):

- ``binary``: one bit a dimension (packed 8 to a byte, the last byte padded with zero bits when the
  dimension is not a multiple of 8), exact Hamming search over all codes;
- ``binary_ivf``: the same codes in inverted lists (only ``nprobe`` lists are scanned);
- ``ivfpq``: product quantization in inverted lists, ``pq_m`` codes of 4 bits a vector, scanned
  with FAISS's SIMD "fast scan" (at 1M vectors, higher recall in less time than 8-bit codes of the
  same 48 bytes: ``benchmarks/index_scale.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

FLOAT_KINDS = ("flat", "hnsw", "ivf")
COMPRESSED_KINDS = ("binary", "binary_ivf", "ivfpq")
INDEX_KINDS = FLOAT_KINDS + COMPRESSED_KINDS
IVF_KINDS = ("ivf", "binary_ivf", "ivfpq")
# Corpus sizes at which ``kind="auto"`` moves on when memory allows: exact (flat) search of 100k
# 384-d vectors takes a few ms per query; HNSW holds float vectors and a graph and builds slowly past
# a few million vectors, where IVF-PQ (a few bytes a vector, candidates re-scored from disk) serves.
FLAT_MAX = 100_000
HNSW_MAX = 5_000_000
# Fewer inverted lists than 4·√n: k-means on 2 cores costs lists × sample × dim, and at 10M vectors
# 4096 lists already scan only ~0.4% of the corpus per query at nprobe 16.
MAX_NLIST = 4096
# What a process holds besides the index: Python, numpy, FAISS and PyTorch (sbert imports it),
# measured as VmRSS after `from sbert.index import VectorIndex`: 381 MiB.
BASE_BYTES = 400 * 2**20


@dataclass(frozen=True)
class Choice:
    """The kind ``kind="auto"`` chose, and why (the CLI prints ``reason``)."""

    kind: str
    reason: str


def default_params(kind: str, count: int = 0, dim: int = 384) -> dict[str, int]:
    """Default FAISS parameters of ``kind`` for ``count`` vectors of ``dim`` dimensions.

    HNSW: M=32, efConstruction=80, efSearch=64. IVF kinds: ``nlist`` 4·√n (at most n/39 and
    4096), ``nprobe`` 16. IVF-PQ: ``pq_m`` = dim/4 codes of 4 bits (dim/8 bytes a vector; an even
    divisor of dim), ``nprobe`` 128 and ``rescore_multiplier`` 80. Other compressed kinds:
    ``rescore_multiplier`` 4 (candidates = 4 × top_k).

    Examples:
        >>> default_params("ivfpq", 1_000_000, 384)["pq_m"]
        96
    """
    params: dict[str, int] = {}
    if kind == "hnsw":
        params = {"hnsw_m": 32, "ef_construction": 80, "ef_search": 64}
    if kind in IVF_KINDS:
        nlist = max(1, min(int(4 * math.sqrt(max(count, 1))), max(count // 39, 1), MAX_NLIST))
        params = {"nlist": nlist if count else 1024, "nprobe": 16}
    if kind == "ivfpq":
        # Measured at 10M vectors (benchmarks/index_scale.py): 128 lists and 80 × top_k candidates
        # re-scored reach recall@10 0.955 at p50 4.3 ms; 4-bit codes need many candidates.
        params.update(nprobe=min(128, params["nlist"]), rescore_multiplier=80)
        params["pq_m"] = max([m for m in range(2, max(dim // 4, 2) + 1, 2) if dim % m == 0] or [1])
    if kind in COMPRESSED_KINDS:
        params.setdefault("rescore_multiplier", 4)
    return params


def memory_bytes(kind: str, count: int, dim: int, params: dict[str, int] | None = None) -> int:
    """Resident memory to serve ``count`` vectors: bytes a vector × count + fixed overhead.

    Per vector: ``flat`` 4·dim + 8 (ids); ``hnsw`` 4·dim + 8·M (level-0 links, 2M of 4 bytes) + 8;
    ``ivf`` 4·dim + 16 (FAISS's list id and ours); ``binary`` dim/8 + 8; ``binary_ivf`` dim/8 + 16;
    ``ivfpq`` pq_m/2 + 16. Overhead: the process (:data:`BASE_BYTES`) plus IVF centroids and PQ
    codebooks. The rescoring file stays on disk (its pages are read per query, not kept).

    Examples:
        >>> round(memory_bytes("ivfpq", 40_000_000, 384) / 2**30, 2)  # GiB at 40M
        2.79
    """
    params = {**default_params(kind, count, dim), **(params or {})}
    per_vector = {
        "flat": 4 * dim + 8,
        "hnsw": 4 * dim + 8 * params.get("hnsw_m", 32) + 8,
        "ivf": 4 * dim + 16,
        "binary": math.ceil(dim / 8) + 8,
        "binary_ivf": math.ceil(dim / 8) + 16,
        "ivfpq": math.ceil(params.get("pq_m", dim // 4) / 2) + 16,  # 4-bit codes
    }[kind]
    overhead = BASE_BYTES
    if kind == "ivf" or kind == "ivfpq":
        overhead += params["nlist"] * dim * 4
    if kind == "binary_ivf":
        overhead += params["nlist"] * math.ceil(dim / 8)
    if kind == "ivfpq":
        code_bytes = math.ceil(params.get("pq_m", dim // 4) / 2)
        overhead += 16 * dim * 4  # pq_m codebooks of 16 centroids of dim/pq_m floats
        overhead += params["nlist"] * 31 * code_bytes  # each list padded to a block of 32 codes
    return per_vector * count + overhead


def choose_kind(count: int, dim: int = 384, max_memory: int | None = None) -> Choice:
    """The kind for ``count`` vectors: flat ≤ 100k < hnsw ≤ 5M < ivfpq, then the first that fits.

    With ``max_memory`` (bytes), a kind whose :func:`memory_bytes` exceeds it is passed over for the
    next smaller one (flat → hnsw → ivf → ivfpq → binary_ivf).

    Raises:
        ValueError: no kind fits ``max_memory``; the message gives the smallest requirement.

    Examples:
        >>> choose_kind(1_000).kind, choose_kind(1_000_000).kind, choose_kind(10_000_000).kind
        ('flat', 'hnsw', 'ivfpq')
        >>> choose_kind(1_000_000, max_memory=1 << 30).kind
        'ivfpq'
    """
    if count < 1:
        raise ValueError(f"an index needs at least one vector, got {count}")
    ladder = ["flat", "hnsw", "ivf", "ivfpq", "binary_ivf"]
    first = "flat" if count <= FLAT_MAX else "hnsw" if count <= HNSW_MAX else "ivfpq"
    by_size = f"{count:,} vectors ({'≤' if count <= FLAT_MAX else '>'} {FLAT_MAX:,} for flat"
    by_size += f", {'≤' if count <= HNSW_MAX else '>'} {HNSW_MAX:,} for hnsw)"
    for kind in ladder[ladder.index(first) :]:
        need = memory_bytes(kind, count, dim)
        if max_memory is None or need <= max_memory:
            # The index's own bytes first: "needs 400 MiB" for 3 vectors read as the index's size.
            limit = f": {format_bytes(need - BASE_BYTES)} in memory, {format_bytes(need)} with the process"
            limit += f" ({format_bytes(max_memory)} allowed)" if max_memory is not None else ""
            return Choice(kind, f"chose {kind} for {by_size}{limit}")
    smallest = min(memory_bytes(kind, count, dim) for kind in INDEX_KINDS)
    raise ValueError(
        f"no index kind serves {count:,} {dim}-d vectors in {format_bytes(max_memory or 0)}: the smallest "
        f"needs {format_bytes(smallest)}; allow more memory (--max-memory) or index fewer vectors"
    )


def parse_bytes(text: str) -> int:
    """``"8G"``, ``"512M"``, ``"1.5GB"`` or a plain byte count → bytes (binary units).

    Examples:
        >>> parse_bytes("8G"), parse_bytes("512m")
        (8589934592, 536870912)
    """
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", text, flags=re.IGNORECASE)
    if not match:
        raise ValueError(f"not a memory size: {text!r} (write e.g. 8G, 512M or 1.5GB)")
    power = " kmgt".index(match.group(2).lower() or " ")
    return int(float(match.group(1)) * 1024**power)


def format_bytes(count: float) -> str:
    """Bytes in GiB (one decimal), MiB or KiB.

    Examples:
        >>> format_bytes(3 * 1544), format_bytes(400 * 2**20), format_bytes(1.5 * 2**30)
        ('5 KiB', '400 MiB', '1.5 GiB')
    """
    if count >= 2**30:
        return f"{count / 2**30:.1f} GiB"
    return f"{count / 2**20:.0f} MiB" if count >= 2**20 else f"{max(count / 2**10, 1):.0f} KiB"


def make_faiss_index(kind: str, dim: int, params: dict[str, int]) -> Any:
    """An empty FAISS index of ``kind`` (inner product on unit vectors for the float kinds)."""
    import faiss

    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        graph = faiss.IndexHNSWFlat(dim, params["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = params["ef_construction"]
        return graph
    if kind == "binary":
        return faiss.IndexBinaryFlat(code_bits(dim))
    quantizer: Any
    index: Any
    if kind == "binary_ivf":
        quantizer = faiss.IndexBinaryFlat(code_bits(dim))
        index = faiss.IndexBinaryIVF(quantizer, code_bits(dim), params["nlist"])
    elif kind == "ivf":
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, params["nlist"], faiss.METRIC_INNER_PRODUCT)
    else:
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFPQFastScan(
            quantizer, dim, params["nlist"], params["pq_m"], 4, faiss.METRIC_INNER_PRODUCT
        )
    index.own_fields = True  # the index frees its quantizer
    quantizer.this.disown()
    index.cp.niter = 10  # k-means converges well before FAISS's 25 on sentence vectors
    index.cp.max_points_per_centroid = 64
    return index


def code_bits(dim: int) -> int:
    """Bits of a packed binary code: ``dim`` rounded up to whole bytes."""
    return 8 * math.ceil(dim / 8)


def faiss_class(kind: str) -> str:
    """The FAISS class name an index of ``kind`` has once read back."""
    return {
        "flat": "IndexFlatIP",
        "hnsw": "IndexHNSWFlat",
        "ivf": "IndexIVFFlat",
        "binary": "IndexBinaryFlat",
        "binary_ivf": "IndexBinaryIVF",
        "ivfpq": "IndexIVFPQFastScan",
    }[kind]


def apply_search_params(faiss_index: Any, kind: str, params: dict[str, int]) -> None:
    if kind == "hnsw":
        faiss_index.hnsw.efSearch = params["ef_search"]
    elif kind in IVF_KINDS:
        faiss_index.nprobe = params["nprobe"]
