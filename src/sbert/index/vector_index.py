"""A vector index on FAISS: float kinds (flat, HNSW, IVF) and compressed kinds re-scored from disk."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sbert.base.contracts import Encoder
from sbert.base.files import staging_dir
from sbert.base.outputs import claiming
from sbert.embeddings.identity import ModelIdentity
from sbert.embeddings.quantization import QuantizationRanges
from sbert.embeddings.search import Hit, as_numpy
from sbert.embeddings.similarity import ArrayLike
from sbert.embeddings.truncation import truncate_embeddings
from sbert.index import files
from sbert.index.files import CORPUS_FILE, IDS_FILE, MANIFEST_FILE, RESCORE_FILE
from sbert.index.kinds import (
    COMPRESSED_KINDS,
    INDEX_KINDS,
    apply_search_params,
    choose_kind,
    default_params,
    faiss_class,
    make_faiss_index,
)
from sbert.index.options import IndexOptions
from sbert.index.rescoring import RescoreVectors, rescore
from sbert.index.texts import kept_texts, open_source_store

METRICS = ("cosine", "dot")


class VectorIndex:
    """Sentence vectors in a FAISS index, with their corpus ids and texts.

    Args:
        dim: Vector dimension.
        kind: One of :data:`~sbert.index.kinds.INDEX_KINDS`: ``"flat"`` (exact),
            ``"hnsw"``, ``"ivf"`` (float vectors in memory), or the compressed ``"binary"``,
            ``"binary_ivf"``, ``"ivfpq"`` (candidates re-scored, see ``rescore``).
        metric: ``"cosine"`` (vectors are normalised on the way in, then inner product) or ``"dot"``.
        model_name: The name of the model that made the vectors.
        params: FAISS parameters (see :func:`~sbert.index.kinds.default_params`).
        identity: The model's identity (:func:`sbert.embeddings.identity.model_identity`); :meth:`load` with a
            model refuses any other model or pipeline.
        rescore: Compressed kinds: the precision candidates are re-scored in, ``"int8"`` (default,
            scores within ~1e-2 of float32), ``"float16"``, ``"float32"`` (exact scores) or ``None``
            (the compressed index's own coarse scores).
        count: The number of vectors expected (sizes the IVF default ``nlist``).

    ``truncated_from`` is the model's vector size when the index holds only the first ``dim`` of each
    vector (``build(dimensions=...)``, ``sbert index build --dimensions``); :meth:`query_vectors` cuts
    the model's query vectors the same way.

    Examples:
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
        identity: ModelIdentity | None = None,
        rescore: str | None = "int8",
        count: int = 0,
    ) -> None:
        if kind not in INDEX_KINDS:
            raise ValueError(f"unknown index kind {kind!r}; choose one of auto, {', '.join(INDEX_KINDS)}")
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
        self.dim, self.kind, self.metric, self.identity = dim, kind, metric, identity
        self.model_name = model_name if model_name is not None else identity.name if identity else None
        self.params: dict[str, int] = {**default_params(kind, count, dim), **(params or {})}
        self.rescore_precision = rescore if kind in COMPRESSED_KINDS else None
        self.ids = np.empty(0, dtype=np.int64)
        self.texts: list[str | None] | None = []
        self.store_path: str | None = None  # texts looked up by id in this store
        self.store_digest: str | None = None  # EmbeddingStore.digest of that store when indexed
        self._store: Any = None  # the store, opened (and checked against store_digest) once
        self.rescore_vectors: RescoreVectors | None = None
        self.choice: str | None = None  # why kind="auto" chose this kind
        self.document_prompt: str | None = None  # put before each sentence when it was embedded
        self.truncated_from: int | None = None  # the model's dimension, when the index holds a prefix
        self.faiss_index: Any = make_faiss_index(kind, dim, self.params)
        apply_search_params(self.faiss_index, kind, self.params)

    @classmethod
    def build(
        cls,
        embeddings: ArrayLike,
        texts: Sequence[str] | None = None,
        ids: Sequence[int] | np.ndarray | None = None,
        *,
        model_name: str | None = None,
        options: IndexOptions | None = None,
        **settings: Any,
    ) -> VectorIndex:
        """Make an index of ``embeddings`` (n, dim) held in memory (for a store on disk see
        :func:`~sbert.index.building.build_index`).

        How it is built is :class:`~sbert.index.options.IndexOptions`, as ``options`` or by keyword
        (``kind=``, ``metric=``, ``params=``, ``identity=``, ``rescore=``, ``max_memory=``,
        ``show_progress_bar=``, ``dimensions=``; a keyword wins over ``options``).
        ``kind="auto"`` picks by size and ``max_memory`` (bytes; :func:`choose_kind`), and records why
        in ``index.choice``. IVF kinds train their centroids on the vectors given. ``dimensions``
        keeps the first so many of each vector, unit length again (a Matryoshka model's prefix).
        """
        options = IndexOptions.of(options, settings)
        kind, dimensions = options.kind, options.dimensions
        vectors = as_numpy(embeddings)
        full = vectors.shape[-1]
        if dimensions is not None:
            vectors = truncate_embeddings(vectors, dimensions)
        if vectors.ndim != 2 or len(vectors) == 0:
            raise ValueError(f"build needs a non-empty (n, dim) matrix, got shape {vectors.shape}")
        choice = choose_kind(len(vectors), vectors.shape[1], options.max_memory) if kind == "auto" else None
        index = cls(
            vectors.shape[1],
            choice.kind if choice else kind,
            options.metric,
            model_name,
            options.params,
            options.identity,
            options.rescore,
            count=len(vectors),
        )
        index.choice = choice.reason if choice else None
        index.truncated_from = full if vectors.shape[1] < full else None
        prepared = index._prepare(vectors)
        index.train(prepared)
        if index.rescore_precision is not None:
            ranges = QuantizationRanges.from_vectors(prepared) if index.rescore_precision == "int8" else None
            index.rescore_vectors = RescoreVectors.in_memory(prepared[:0], index.rescore_precision, ranges)
        index.add(vectors, texts, ids, show_progress_bar=options.show_progress_bar)
        return index

    def __len__(self) -> int:
        return int(self.faiss_index.ntotal)

    def train(self, sample: np.ndarray) -> None:
        """Train IVF centroids (and PQ codebooks) on prepared vectors; a no-op for other kinds."""
        if not self.faiss_index.is_trained:
            self.faiss_index.train(self._codes(sample))

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
        if self.texts is None and texts is not None:
            raise ValueError("this index looks its texts up in a store: add vectors without texts")
        start = int(self.ids.max()) + 1 if len(self.ids) else 0
        new_ids = np.arange(start, start + len(vectors)) if ids is None else np.asarray(ids, dtype=np.int64)
        if new_ids.shape != (len(vectors),):
            raise ValueError(f"{len(new_ids)} ids given for {len(vectors)} vectors")
        if not self.faiss_index.is_trained:
            raise ValueError(f"this {self.kind} index is not trained; make it with VectorIndex.build")
        if self.rescore_precision is not None and (
            self.rescore_vectors is None or isinstance(self.rescore_vectors.codes, np.memmap)
        ):
            raise ValueError(
                f"a saved {self.kind} index is served from memory maps and cannot grow: rebuild it with "
                "the new vectors (build_index), or make it with VectorIndex.build"
            )
        bar = tqdm(
            total=len(vectors), desc=f"Indexing ({self.kind})", unit="vec", disable=not show_progress_bar
        )
        for begin in range(0, len(vectors), chunk_size):
            chunk = self._prepare(vectors[begin : begin + chunk_size])
            self.add_prepared(chunk)
            bar.update(len(chunk))
        bar.close()
        self.ids = np.concatenate([self.ids, new_ids])
        if self.texts is not None:
            self.texts.extend(texts if texts is not None else [None] * len(vectors))

    def add_prepared(self, chunk: np.ndarray) -> None:
        """Add prepared vectors to FAISS and, in memory, to the rescoring vectors (ids kept by the caller)."""
        self.faiss_index.add(self._codes(chunk))
        held = self.rescore_vectors
        if held is not None:  # in memory (build); a streamed build writes its rescoring file itself
            more = RescoreVectors.in_memory(chunk, held.precision, held.ranges)
            held.codes = np.concatenate([held.codes, more.codes])

    def search(
        self, query_embeddings: ArrayLike, top_k: int = 10, rescore_multiplier: int | None = None
    ) -> list[list[Hit]]:
        """The ``top_k`` nearest corpus vectors of every query: :class:`Hit` ``(corpus_id, score)``, best first.

        Compressed kinds take ``top_k × rescore_multiplier`` candidates (default: the index's
        ``rescore_multiplier`` parameter) and re-rank them with the rescoring vectors. A result list
        is shorter than ``top_k`` only when the index holds fewer vectors; it never holds padding.
        """
        queries = as_numpy(query_embeddings)
        queries = queries[None, :] if queries.ndim == 1 else queries
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        if len(self) == 0:
            raise ValueError("the index is empty: there is nothing to search")
        if queries.shape[1] != self.dim:
            prefix = (
                f"the first {self.dim} of the {self.truncated_from} dimensions of"
                if self.truncated_from
                else ""
            )
            raise ValueError(
                f"query embeddings have dimension {queries.shape[1]} but the index holds {self.dim}-d vectors "
                f"({prefix or 'from'} model {self.model_name!r})"
                + (": cut the queries with index.query_vectors() first" if self.truncated_from else "")
            )
        multiplier = rescore_multiplier or self.params.get("rescore_multiplier", 1)
        if multiplier < 1:
            raise ValueError(f"rescore_multiplier must be at least 1, got {multiplier}")
        prepared = self._prepare(queries)
        wanted = min(top_k * multiplier if self.kind in COMPRESSED_KINDS else top_k, len(self))
        scores, positions = self.faiss_index.search(self._codes(prepared), wanted)
        if self.kind.startswith("binary"):  # Hamming distance → similarity in [-1, 1]
            # Over dim bits, not the code's whole bytes: the padding bits are 0 on both sides.
            scores = 1.0 - 2.0 * scores.astype(np.float32) / self.dim
        results = []
        for query, row_pos, row_scores in zip(prepared, positions, scores):
            if self.rescore_vectors is not None:
                kept, kept_scores = rescore(query, row_pos, self.rescore_vectors, top_k)
            else:
                valid = row_pos >= 0  # FAISS pads short result lists with -1
                kept, kept_scores = row_pos[valid][:top_k].tolist(), row_scores[valid][:top_k].tolist()
            results.append([Hit(int(self.ids[p]), float(s)) for p, s in zip(kept, kept_scores)])
        return results

    def query_vectors(self, embeddings: ArrayLike) -> np.ndarray:
        """The model's query vectors as this index holds its vectors: cut to the first ``dim`` and
        unit length again when it was built with ``dimensions``, else as they are."""
        vectors = as_numpy(embeddings)
        if self.truncated_from is not None and vectors.shape[-1] == self.truncated_from:
            return truncate_embeddings(vectors, self.dim)
        return vectors

    def text(self, corpus_id: int) -> str | None:
        """The text stored with a corpus id (from the store for an index built from one)."""
        return self.texts_of([corpus_id])[0]

    def texts_of(self, corpus_ids: Sequence[int]) -> list[str | None]:
        """The texts of several corpus ids; read from the store by id when the index was built from one."""
        if self.texts is not None:
            return kept_texts(self.ids, self.texts, corpus_ids)
        if self.store_path is None:
            return [None] * len(corpus_ids)
        return list(self._texts_store().texts(np.asarray(corpus_ids, dtype=np.int64)))

    def _texts_store(self) -> Any:
        """The store the texts come from, refused if it is not the store this index was built from."""
        if self._store is None:
            self._store = open_source_store(str(self.store_path), self.store_digest)
        return self._store

    def vectors(self) -> np.ndarray:
        """The stored vectors, (n, dim), as FAISS holds them (unit length for cosine).

        Compressed kinds give their rescoring vectors (dequantized for int8).
        """
        if self.kind in COMPRESSED_KINDS:
            if self.rescore_vectors is None:
                raise ValueError(
                    f"a {self.kind} index without rescoring vectors cannot give its vectors back"
                )
            return self.rescore_vectors.rows(np.arange(len(self)))
        if self.kind == "ivf":
            self.faiss_index.make_direct_map()
        return (
            np.vstack([self.faiss_index.reconstruct(i) for i in range(len(self))])
            if len(self)
            else np.empty((0, self.dim), dtype=np.float32)
        )

    @claiming("path", files.INDEX)
    def save(self, path: str | Path) -> None:
        """Write the index directory atomically (temporary directory, then rename); see :mod:`sbert.base.outputs`."""
        path = Path(path)
        staging = staging_dir(path)
        try:
            with (staging / IDS_FILE).open("wb") as handle:
                np.save(handle, np.asarray(self.ids), allow_pickle=False)
            if self.rescore_vectors is not None:
                with (staging / RESCORE_FILE).open("wb") as handle:
                    np.save(handle, np.asarray(self.rescore_vectors.codes), allow_pickle=False)
            files.write_texts(staging, self.ids, self.texts)
            files.commit(staging, path, self.faiss_index, self.manifest())
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def manifest(self) -> dict[str, Any]:
        """The manifest fields that describe this index (files are added when they are written)."""
        ranges = self.rescore_vectors.ranges if self.rescore_vectors is not None else None
        return {
            "model": self.model_name,
            "identity": self.identity.to_dict() if self.identity else None,
            "dimension": self.dim,
            "truncated_from": self.truncated_from,
            "metric": self.metric,
            "normalized": self.metric == "cosine",
            "count": len(self),
            "kind": self.kind,
            "params": self.params,
            "rescore": self.rescore_precision,
            "rescore_ranges": ranges.to_dict() if ranges is not None else None,
            "document_prompt": self.document_prompt,
            "texts": (
                {"store": self.store_path, "store_digest": self.store_digest}
                if self.texts is None
                else "corpus"
            ),
        }

    @classmethod
    def load(cls, path: str | Path, model: str | Encoder | None = None) -> VectorIndex:
        """Read an index directory, checking every file against the manifest.

        Args:
            path: The directory :meth:`save` wrote.
            model: Optional model (a ``SentenceEncoder``, checked by fingerprint of weights and
                pipeline against the identity the index recorded; or anything with ``name`` and
                ``dim``) or a model name: an index made with another model is refused.

        Raises:
            IndexLoadError: a file is missing, corrupt or inconsistent (the message names it), or the model
                does not match (the message names both sides).
            sbert.embeddings.identity.ModelMismatchError: the model's pooling, layers or weights differ.
        """
        path = Path(path)
        manifest = files.read_manifest(path / MANIFEST_FILE)
        identity = files.check_model(manifest, model, path)
        faiss_index = files.read_faiss(path, manifest, faiss_class(manifest["kind"]))
        index = cls(
            manifest["dimension"],
            manifest["kind"],
            manifest["metric"],
            manifest["model"],
            manifest["params"],
            identity,
            manifest.get("rescore"),
            count=manifest["count"],
        )
        index.faiss_index = faiss_index
        apply_search_params(faiss_index, index.kind, index.params)
        index.ids = files.read_ids(path / IDS_FILE, manifest)
        index.document_prompt = manifest.get("document_prompt")
        index.truncated_from = manifest.get("truncated_from")
        texts = manifest.get("texts", "corpus")
        if isinstance(texts, dict):
            index.texts, index.store_path = None, texts.get("store")
            index.store_digest = texts.get("store_digest")
        else:
            index.texts = files.read_corpus(path / CORPUS_FILE, index.ids, manifest)
        if index.rescore_precision is not None:
            index.rescore_vectors = files.read_rescore(path, manifest)
        return index

    def _prepare(self, vectors: np.ndarray) -> np.ndarray:
        """C-contiguous float32, unit length for cosine (FAISS then scores by inner product)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.metric == "cosine":
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.maximum(norms, 1e-12)
        return vectors

    def _codes(self, prepared: np.ndarray) -> np.ndarray:
        """What FAISS takes: packed sign bits for the binary kinds, else the float vectors."""
        if self.kind.startswith("binary"):
            return np.ascontiguousarray(np.packbits(prepared > 0, axis=1))  # (n, ceil(dim / 8)), 0-padded
        return prepared
