"""A vector index on FAISS for corpora that outgrow exact search: flat, HNSW or IVF.

An index directory holds

- ``index.faiss``: the FAISS index (vectors unit length when the metric is cosine);
- ``ids.npy``: the corpus id of each vector, in FAISS order (int64, read without pickle);
- ``corpus.jsonl``: one ``{"id": ..., "text": ...}`` line per vector (text ``null`` when none was given);
- ``manifest.json``: model name, dimension, metric and normalisation, count, kind, parameters, sbert
  version, and the size and SHA-256 of ``index.faiss``.

It is written under a temporary name and renamed into place, so a failed save leaves the previous
index intact; loading checks the manifest against every file and, when given, against the model.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sbert import __version__
from sbert.applications.search import Hit, as_numpy, semantic_search
from sbert.errors import ModelLoadError
from sbert.model_io import replace_dir
from sbert.similarity import ArrayLike

INDEX_KINDS = ("flat", "hnsw", "ivf")
METRICS = ("cosine", "dot")
# Corpus sizes at which ``kind="auto"`` moves on: exact (flat) search of 100k 384-d vectors takes a
# few ms per query; HNSW keeps its graph in memory and builds slowly past a few million vectors, where
# IVF trains quickly and stays compact.
FLAT_MAX = 100_000
HNSW_MAX = 5_000_000
FORMAT_VERSION = 1
FAISS_FILE, IDS_FILE, CORPUS_FILE, MANIFEST_FILE = "index.faiss", "ids.npy", "corpus.jsonl", "manifest.json"


class IndexLoadError(ModelLoadError):
    """An index directory is missing a file, is corrupt, or does not match the model."""


def choose_kind(count: int) -> str:
    """The index kind for a corpus of ``count`` vectors: flat ≤ 100k < hnsw ≤ 5M < ivf.

    Example:
        >>> choose_kind(1_000), choose_kind(1_000_000), choose_kind(10_000_000)
        ('flat', 'hnsw', 'ivf')
    """
    if count <= FLAT_MAX:
        return "flat"
    return "hnsw" if count <= HNSW_MAX else "ivf"


class VectorIndex:
    """Sentence vectors in a FAISS index, with their corpus ids and texts.

    Args:
        dim: Vector dimension.
        kind: ``"flat"`` (exact), ``"hnsw"`` (graph, fast and accurate, memory-hungry) or ``"ivf"``
            (inverted lists; needs training vectors, see :meth:`build`).
        metric: ``"cosine"`` (vectors are normalised on the way in) or ``"dot"``.
        model_name: The model that made the vectors; checked on :meth:`load`.
        params: ``hnsw_m``, ``ef_construction``, ``ef_search`` (HNSW); ``nlist``, ``nprobe`` (IVF).

    Example:
        >>> import numpy as np
        >>> vectors = np.random.default_rng(0).normal(size=(100, 8)).astype("float32")
        >>> index = VectorIndex.build(vectors, kind="flat", model_name="demo")
        >>> index.search(vectors[:1], top_k=1)[0][0].corpus_id
        0
    """

    def __init__(
        self,
        dim: int,
        kind: str = "flat",
        metric: str = "cosine",
        model_name: str | None = None,
        params: dict[str, int] | None = None,
    ) -> None:
        import faiss

        if kind not in INDEX_KINDS:
            raise ValueError(f"unknown index kind {kind!r}; choose one of auto, {', '.join(INDEX_KINDS)}")
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
        self.dim, self.kind, self.metric, self.model_name = dim, kind, metric, model_name
        self.params: dict[str, int] = {**default_params(kind), **(params or {})}
        self.ids = np.empty(0, dtype=np.int64)
        self.texts: list[str | None] = []
        self.faiss_index: Any = None
        if kind == "flat":
            self.faiss_index = faiss.IndexFlatIP(dim)
        elif kind == "hnsw":
            self.faiss_index = faiss.IndexHNSWFlat(dim, self.params["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
            self.faiss_index.hnsw.efConstruction = self.params["ef_construction"]
        else:
            quantizer = faiss.IndexFlatIP(dim)
            self.faiss_index = faiss.IndexIVFFlat(
                quantizer, dim, self.params["nlist"], faiss.METRIC_INNER_PRODUCT
            )
            self._quantizer = quantizer  # FAISS does not own it from Python: keep it alive
        self._apply_search_params()

    @classmethod
    def build(
        cls,
        embeddings: ArrayLike,
        texts: Sequence[str] | None = None,
        ids: Sequence[int] | np.ndarray | None = None,
        kind: str = "auto",
        metric: str = "cosine",
        model_name: str | None = None,
        params: dict[str, int] | None = None,
        show_progress_bar: bool = False,
    ) -> VectorIndex:
        """Make an index of ``embeddings`` (n, dim); ``kind="auto"`` picks by size (:func:`choose_kind`).

        IVF trains its ``nlist`` centroids (default ``4·√n``, at most ``n / 39``) on the vectors given.
        """
        vectors = as_numpy(embeddings)
        if vectors.ndim != 2 or len(vectors) == 0:
            raise ValueError(f"build needs a non-empty (n, dim) matrix, got shape {vectors.shape}")
        kind = choose_kind(len(vectors)) if kind == "auto" else kind
        params = dict(params or {})
        if kind == "ivf" and "nlist" not in params:
            params["nlist"] = max(1, min(int(4 * math.sqrt(len(vectors))), len(vectors) // 39))
        index = cls(vectors.shape[1], kind, metric, model_name, params)
        if kind == "ivf":
            index.faiss_index.train(index._prepare(vectors))
        index.add(vectors, texts, ids, show_progress_bar=show_progress_bar)
        return index

    def __len__(self) -> int:
        return int(self.faiss_index.ntotal)

    def add(
        self,
        embeddings: ArrayLike,
        texts: Sequence[str] | None = None,
        ids: Sequence[int] | np.ndarray | None = None,
        show_progress_bar: bool = False,
        chunk_size: int = 50_000,
    ) -> None:
        """Append vectors; ``ids`` default to consecutive numbers after the last id."""
        vectors = as_numpy(embeddings)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(
                f"the index holds {self.dim}-d vectors but the vectors added have shape {vectors.shape}"
            )
        if texts is not None and len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts given for {len(vectors)} vectors")
        start = int(self.ids.max()) + 1 if len(self.ids) else 0
        new_ids = np.arange(start, start + len(vectors)) if ids is None else np.asarray(ids, dtype=np.int64)
        if new_ids.shape != (len(vectors),):
            raise ValueError(f"{len(new_ids)} ids given for {len(vectors)} vectors")
        if not self.faiss_index.is_trained:
            raise ValueError("this IVF index is not trained; make it with VectorIndex.build")
        bar = tqdm(
            total=len(vectors), desc=f"Indexing ({self.kind})", unit="vec", disable=not show_progress_bar
        )
        for begin in range(0, len(vectors), chunk_size):
            chunk = vectors[begin : begin + chunk_size]
            self.faiss_index.add(self._prepare(chunk))
            bar.update(len(chunk))
        bar.close()
        self.ids = np.concatenate([self.ids, new_ids])
        self.texts.extend(texts if texts is not None else [None] * len(vectors))

    def search(self, query_embeddings: ArrayLike, top_k: int = 10) -> list[list[Hit]]:
        """The ``top_k`` nearest corpus vectors of every query: :class:`Hit` ``(corpus_id, score)``, best first."""
        queries = as_numpy(query_embeddings)
        queries = queries[None, :] if queries.ndim == 1 else queries
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        if len(self) == 0:
            raise ValueError("the index is empty: there is nothing to search")
        if queries.shape[1] != self.dim:
            raise ValueError(
                f"query embeddings have dimension {queries.shape[1]} but the index holds {self.dim}-d "
                f"vectors (model {self.model_name!r})"
            )
        scores, positions = self.faiss_index.search(self._prepare(queries), min(top_k, len(self)))
        return [
            [Hit(int(self.ids[p]), float(s)) for p, s in zip(row_pos, row_scores) if p >= 0]
            for row_pos, row_scores in zip(positions, scores)
        ]

    def text(self, corpus_id: int) -> str | None:
        """The text stored with a corpus id."""
        positions = np.flatnonzero(self.ids == corpus_id)
        return self.texts[int(positions[0])] if len(positions) else None

    def vectors(self) -> np.ndarray:
        """The stored vectors, (n, dim), as FAISS holds them (unit length for cosine)."""
        if self.kind == "ivf":
            self.faiss_index.make_direct_map()
        return (
            np.vstack([self.faiss_index.reconstruct(i) for i in range(len(self))])
            if len(self)
            else np.empty((0, self.dim), dtype=np.float32)
        )

    def save(self, path: str | Path) -> None:
        """Write the index directory atomically (temporary directory, then rename)."""
        import faiss

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            faiss.write_index(self.faiss_index, str(staging / FAISS_FILE))
            with (staging / IDS_FILE).open("wb") as handle:
                np.save(handle, self.ids, allow_pickle=False)
            with (staging / CORPUS_FILE).open("w", encoding="utf-8") as handle:
                for corpus_id, text in zip(self.ids.tolist(), self.texts):
                    handle.write(json.dumps({"id": corpus_id, "text": text}, ensure_ascii=False) + "\n")
            manifest = {
                "format": "sbert-index",
                "format_version": FORMAT_VERSION,
                "model": self.model_name,
                "dimension": self.dim,
                "metric": self.metric,
                "normalized": self.metric == "cosine",
                "count": len(self),
                "kind": self.kind,
                "params": self.params,
                "sbert_version": __version__,
                "faiss_version": faiss.__version__,
                "faiss_bytes": (staging / FAISS_FILE).stat().st_size,
                "faiss_sha256": sha256(staging / FAISS_FILE),
            }
            (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            replace_dir(staging, path)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    @classmethod
    def load(cls, path: str | Path, model: Any = None) -> VectorIndex:
        """Read an index directory, checking every file against the manifest.

        Args:
            path: The directory :meth:`save` wrote.
            model: Optional model (anything with ``name`` and ``dim``, e.g. a ``SentenceEncoder``) or a
                model name: an index made with another model is refused.

        Raises:
            IndexLoadError: a file is missing, corrupt or inconsistent (the message names it), or the model
                does not match (the message names both sides).
        """
        import faiss

        path = Path(path)
        manifest = read_manifest(path / MANIFEST_FILE)
        check_model(manifest, model, path)
        faiss_file = path / FAISS_FILE
        if not faiss_file.is_file():
            raise IndexLoadError(f"{faiss_file}: missing")
        size = faiss_file.stat().st_size
        if size != manifest["faiss_bytes"] or sha256(faiss_file) != manifest["faiss_sha256"]:
            raise IndexLoadError(
                f"{faiss_file}: {size} bytes, checksum does not match {MANIFEST_FILE} "
                f"({manifest['faiss_bytes']} bytes): the file is corrupt or half-written"
            )
        try:
            faiss_index = faiss.read_index(str(faiss_file))
        except RuntimeError as error:
            raise IndexLoadError(
                f"{faiss_file}: FAISS cannot read it: {str(error).splitlines()[0]}"
            ) from error
        for what, found, expected in (
            ("vectors", faiss_index.ntotal, manifest["count"]),
            ("dimension", faiss_index.d, manifest["dimension"]),
        ):
            if found != expected:
                raise IndexLoadError(
                    f"{faiss_file}: holds {what} {found} but {MANIFEST_FILE} says {expected}"
                )
        index = cls(
            manifest["dimension"], manifest["kind"], manifest["metric"], manifest["model"], manifest["params"]
        )
        index.faiss_index = faiss_index
        index._apply_search_params()
        index.ids = _read_ids(path / IDS_FILE, manifest["count"])
        index.texts = _read_corpus(path / CORPUS_FILE, index.ids)
        return index

    def _prepare(self, vectors: np.ndarray) -> np.ndarray:
        """C-contiguous float32, unit length for cosine (FAISS then scores by inner product)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.metric == "cosine":
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.maximum(norms, 1e-12)
        return vectors

    def _apply_search_params(self) -> None:
        if self.kind == "hnsw":
            self.faiss_index.hnsw.efSearch = self.params["ef_search"]
        elif self.kind == "ivf":
            self.faiss_index.nprobe = self.params["nprobe"]


def default_params(kind: str) -> dict[str, int]:
    """Default FAISS parameters: HNSW M=32, efConstruction=80, efSearch=64; IVF nprobe=16."""
    if kind == "hnsw":
        return {"hnsw_m": 32, "ef_construction": 80, "ef_search": 64}
    if kind == "ivf":
        return {"nlist": 1024, "nprobe": 16}
    return {}


def recall_at_k(
    index: VectorIndex,
    query_embeddings: ArrayLike,
    k: int = 10,
    exact: Sequence[Sequence[Hit]] | None = None,
    corpus_embeddings: ArrayLike | None = None,
) -> float:
    """Share of the exact top-k that the index finds in its top-k, averaged over the queries.

    Args:
        index: The index to judge.
        query_embeddings: (queries, dim).
        k: Results compared per query.
        exact: Exact results per query (from :func:`semantic_search`), if already computed.
        corpus_embeddings: Otherwise the corpus, searched exactly here; default: the index's own vectors.

    Example:
        >>> import numpy as np
        >>> vectors = np.random.default_rng(0).normal(size=(200, 8)).astype("float32")
        >>> recall_at_k(VectorIndex.build(vectors, kind="flat"), vectors[:5], k=3)
        1.0
    """
    if exact is None:
        corpus = index.vectors() if corpus_embeddings is None else as_numpy(corpus_embeddings)
        ids = index.ids if corpus_embeddings is None else np.arange(len(corpus))
        exact = [
            [Hit(int(ids[h.corpus_id]), h.score) for h in row]
            for row in semantic_search(query_embeddings, corpus, top_k=k, score_function=index.metric)
        ]
    found = index.search(query_embeddings, top_k=k)
    if len(found) != len(exact):
        raise ValueError(f"{len(exact)} exact result lists for {len(found)} queries")
    recalls = []
    for approx_row, exact_row in zip(found, exact):
        truth = {h.corpus_id for h in exact_row[:k]}
        recalls.append(len(truth & {h.corpus_id for h in approx_row}) / max(len(truth), 1))
    return float(np.mean(recalls))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest, with every field that loading needs; the error names the file and the field."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise IndexLoadError(f"{path}: missing; is {path.parent} an sbert index directory?") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise IndexLoadError(f"{path}: not valid JSON: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != "sbert-index":
        raise IndexLoadError(f"{path}: not an sbert index manifest")
    required = ("dimension", "metric", "count", "kind", "params", "faiss_bytes", "faiss_sha256", "model")
    missing = [key for key in required if key not in manifest]
    if missing:
        raise IndexLoadError(f"{path}: missing field(s) {', '.join(missing)}")
    return manifest


def check_model(manifest: dict[str, Any], model: Any, path: Path) -> None:
    """Refuse an index made with another model or dimension; the message names both sides."""
    if model is None:
        return
    name = model if isinstance(model, str) else getattr(model, "name", None)
    if name is not None and manifest["model"] is not None and name != manifest["model"]:
        raise IndexLoadError(
            f"{path / MANIFEST_FILE}: the index was built with model {manifest['model']!r}, "
            f"but the model given is {name!r}"
        )
    dim = getattr(model, "dim", None)
    if dim is not None and dim != manifest["dimension"]:
        raise IndexLoadError(
            f"{path / MANIFEST_FILE}: the index holds {manifest['dimension']}-d vectors, "
            f"but the model gives {dim}-d vectors"
        )


def _read_ids(path: Path, count: int) -> np.ndarray:
    try:
        ids = np.load(path, allow_pickle=False)
    except FileNotFoundError as error:
        raise IndexLoadError(f"{path}: missing") from error
    except (ValueError, OSError, EOFError) as error:
        raise IndexLoadError(f"{path}: cannot be read: {error}") from error
    if ids.shape != (count,) or ids.dtype.kind not in "iu":
        raise IndexLoadError(f"{path}: holds {ids.dtype} of shape {ids.shape}, expected {count} integer ids")
    return ids.astype(np.int64)


def _read_corpus(path: Path, ids: np.ndarray) -> list[str | None]:
    texts: list[str | None] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as error:
        raise IndexLoadError(f"{path}: missing") from error
    if len(lines) != len(ids):
        raise IndexLoadError(f"{path}: {len(lines)} lines, but the index holds {len(ids)} vectors")
    for number, (line, corpus_id) in enumerate(zip(lines, ids.tolist()), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise IndexLoadError(f"{path}:{number}: not valid JSON: {error.msg}") from None
        if not isinstance(record, dict) or record.get("id") != corpus_id:
            raise IndexLoadError(f"{path}:{number}: expected id {corpus_id}, found {line[:80]!r}")
        texts.append(record.get("text"))
    return texts
