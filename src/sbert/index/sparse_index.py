"""An index of sparse vectors (SPLADE): exact search by sparse products, or approximate with Seismic.

A sparse index directory holds, under the same rules as a dense index (:mod:`sbert.index.files`):

- ``vectors.npz``: the documents' vectors, a float32 CSR matrix (``scipy.sparse.save_npz``, read
  without pickle): the exact kind searches it, the Seismic kind is rebuilt from it if need be;
- ``seismic.index.seismic``: kind ``seismic`` only, Seismic's own serialised index;
- ``ids.npy``, ``corpus.jsonl``: the corpus ids and texts, as a dense index holds them;
- ``manifest.json``: ``"format": "sbert-sparse-index"``, the model identity, vocabulary size, count,
  kind, parameters, versions, and the size and SHA-256 of every other file, each checked on load.

It is written into a staging directory and swapped in whole, so ``path`` always holds a complete old
or new index; a model other than the one that made the vectors is refused on load.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from sbert.base import json_text
from sbert.base.contracts import Encoder
from sbert.base.files import replace_dir, staging_dir
from sbert.base.outputs import claiming
from sbert.embeddings.identity import ModelIdentity
from sbert.embeddings.search import Hit
from sbert.index import files, seismic
from sbert.index.files import CORPUS_FILE, IDS_FILE, MANIFEST_FILE, IndexLoadError
from sbert.index.texts import kept_texts
from sbert.sparse.vectors import to_csr

SPARSE_FORMAT, SPARSE_FORMAT_VERSION = files.SPARSE_INDEX_FORMAT, 1
SPARSE_KINDS = ("exact", "seismic")
VECTORS_FILE, SEISMIC_STEM = "vectors.npz", "seismic"
SEISMIC_FILE = SEISMIC_STEM + seismic.INDEX_SUFFIX
QUERY_CHUNK_SIZE, CORPUS_CHUNK_SIZE = 64, 100_000


class SparseIndex:
    """Sparse document vectors with their corpus ids and texts, searched by dot product.

    Args:
        dim: Vocabulary size (the vectors' width).
        kind: ``"exact"`` (every document scored by sparse matrix products; the oracle) or
            ``"seismic"`` (approximate, Seismic's inverted index; see :mod:`sbert.index.seismic`).
        model_name: The name of the model that made the vectors.
        params: Seismic's build and search settings (``n_postings``, ``summary_energy``, ...,
            ``query_cut``, ``heap_factor``); ignored by ``exact``.
        identity: The model's identity; :meth:`load` with a model refuses any other model.

    Examples:
        >>> import scipy.sparse
        >>> docs = scipy.sparse.csr_matrix([[0, 2.0, 0, 1.0], [1.0, 0, 0, 0], [0, 1.0, 3.0, 0]])
        >>> index = SparseIndex.build(docs, texts=["a b", "c", "b d"], model_name="demo")
        >>> [(hit.corpus_id, hit.score) for hit in index.search(docs[0], top_k=2)[0]]
        [(0, 5.0), (2, 2.0)]
    """

    def __init__(
        self,
        dim: int,
        kind: str = "exact",
        model_name: str | None = None,
        params: dict[str, Any] | None = None,
        identity: ModelIdentity | None = None,
    ) -> None:
        if kind not in SPARSE_KINDS:
            raise ValueError(f"unknown sparse index kind {kind!r}; choose one of {', '.join(SPARSE_KINDS)}")
        self.dim, self.kind, self.identity = dim, kind, identity
        self.model_name = model_name if model_name is not None else identity.name if identity else None
        defaults = {**seismic.BUILD_DEFAULTS, **seismic.SEARCH_DEFAULTS} if kind == "seismic" else {}
        self.params: dict[str, Any] = {**defaults, **(params or {})}
        self.matrix = scipy.sparse.csr_matrix((0, dim), dtype=np.float32)  # (n, dim)
        self.ids = np.empty(0, dtype=np.int64)
        self.texts: list[str | None] = []
        self.document_prompt: str | None = None  # put before each text when it was encoded
        self.engine: Any = None  # the Seismic index (kind seismic)
        self._blocks: list[scipy.sparse.csr_matrix] | None = None  # the exact path's transposed blocks

    @classmethod
    def build(
        cls,
        vectors: Any,
        texts: Sequence[str] | None = None,
        ids: Sequence[int] | np.ndarray | None = None,
        *,
        kind: str = "exact",
        model: Any = None,
        model_name: str | None = None,
        identity: ModelIdentity | None = None,
        params: dict[str, Any] | None = None,
    ) -> SparseIndex:
        """Index ``vectors`` (n, vocabulary): any form :func:`sbert.sparse.vectors.to_csr` takes.

        ``model`` (a ``SparseEncoder``) records its name and identity (:func:`model_identity`);
        ``ids`` default to ``0..n-1``. Kind ``seismic`` builds Seismic's index now.

        Raises:
            ValueError: no vectors, or ids/texts of another length than the vectors.
        """
        matrix = to_csr(vectors)
        if matrix.shape[0] == 0:
            raise ValueError("build needs at least one sparse vector, got none")
        if model is not None:
            from sbert.embeddings.identity import model_identity

            identity = identity or model_identity(model)
            model_name = model_name or getattr(model, "name", None)
        index = cls(matrix.shape[1], kind, model_name, params, identity)
        if model is not None and hasattr(model, "document_prompt"):
            index.document_prompt = model.document_prompt(None, None)
        n = matrix.shape[0]
        index.ids = np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
        if index.ids.shape != (n,):
            raise ValueError(f"{len(index.ids)} ids given for {n} sparse vectors")
        if len(np.unique(index.ids)) != n:
            raise ValueError("the ids given repeat an id: each vector needs its own")
        if texts is not None and len(texts) != n:
            raise ValueError(f"{len(texts)} texts given for {n} sparse vectors")
        index.texts = list(texts) if texts is not None else [None] * n
        index.matrix = matrix
        if kind == "seismic":
            index.engine = seismic.build(matrix, index.params)
        return index

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def search(
        self,
        query_vectors: Any,
        top_k: int = 10,
        *,
        query_cut: int | None = None,
        heap_factor: float | None = None,
        exact: bool = False,
    ) -> list[list[Hit]]:
        """The ``top_k`` documents of each query by dot product: :class:`Hit` ``(corpus_id, score)``, best first.

        Exact search returns ``min(top_k, len(index))`` hits, documents sharing no dimension with the
        query included (score 0), equal scores ordered by position in the index (lower first, as
        :func:`sbert.embeddings.search.semantic_search`). Seismic returns only documents that share a
        dimension with the query, and is approximate; ``query_cut`` and ``heap_factor`` override the
        index's settings for this call, ``exact=True`` searches a Seismic index exactly.

        Raises:
            ValueError: ``top_k`` < 1, an empty index, or queries of another width than the index.
        """
        queries = to_csr(query_vectors)
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        if len(self) == 0:
            raise ValueError("the sparse index is empty: there is nothing to search")
        if queries.shape[1] != self.dim:
            raise ValueError(
                f"query vectors have {queries.shape[1]} dimensions but the index holds {self.dim}-dimensional "
                f"vectors (model {self.model_name!r}): encode the queries with that model"
            )
        if self.kind == "seismic" and not exact:
            settings = dict(self.params)
            overrides = seismic.checked_search_settings(query_cut, heap_factor)
            settings.update(overrides)
            rows = seismic.search(self.engine, queries, top_k, settings)
        else:
            rows = self._exact(queries, top_k)
        return [[Hit(int(self.ids[row]), score) for row, score in hits] for hits in rows]

    def _exact(self, queries: scipy.sparse.csr_matrix, top_k: int) -> list[list[tuple[int, float]]]:
        """Every document scored, a (query chunk × corpus block) at a time; only the running top-k kept."""
        if self._blocks is None:
            # Transposed per block, in float64: query @ block is then an inverted-index walk (only the
            # postings of the query's dimensions are touched) with sums exact to ~1e-16.
            self._blocks = [
                self.matrix[start : start + CORPUS_CHUNK_SIZE].T.astype(np.float64).tocsr()
                for start in range(0, len(self), CORPUS_CHUNK_SIZE)
            ]
        k = min(top_k, len(self))
        results: list[list[tuple[int, float]]] = []
        for begin in range(0, queries.shape[0], QUERY_CHUNK_SIZE):
            chunk = queries[begin : begin + QUERY_CHUNK_SIZE].astype(np.float64)
            best_rows = np.empty((chunk.shape[0], 0), dtype=np.int64)
            best_scores = np.empty((chunk.shape[0], 0), dtype=np.float64)
            offset = 0
            for block in self._blocks:
                scores = (chunk @ block).toarray()  # (queries, block documents)
                rows = np.broadcast_to(np.arange(offset, offset + scores.shape[1]), scores.shape)
                best_rows, best_scores = _top_k(
                    np.hstack([best_rows, rows]), np.hstack([best_scores, scores]), k
                )
                offset += scores.shape[1]
            results.extend(
                list(zip(r.tolist(), s.tolist(), strict=True))
                for r, s in zip(best_rows, best_scores, strict=True)
            )
        return results

    def text(self, corpus_id: int) -> str | None:
        """The text stored with a corpus id."""
        return self.texts_of([corpus_id])[0]

    def texts_of(self, corpus_ids: Sequence[int]) -> list[str | None]:
        """The texts of several corpus ids (None for an id the index lacks or one stored without text)."""
        return kept_texts(self.ids, self.texts, corpus_ids)

    @claiming("path", files.INDEX)
    def save(self, path: str | Path) -> None:
        """Write the index directory atomically (staging directory, then swapped in); see :mod:`sbert.base.outputs`."""
        from sbert._version import __version__

        path = Path(path)
        staging = staging_dir(path)
        try:
            scipy.sparse.save_npz(staging / VECTORS_FILE, self.matrix, compressed=False)
            with (staging / IDS_FILE).open("wb") as handle:
                np.save(handle, self.ids, allow_pickle=False)
            files.write_texts(staging, self.ids, self.texts)
            if self.engine is not None:
                seismic.save(self.engine, staging, SEISMIC_STEM)
            manifest = {
                "format": SPARSE_FORMAT,
                "format_version": SPARSE_FORMAT_VERSION,
                **self.manifest(),
                "sbert_version": __version__,
                "scipy_version": scipy.__version__,
                "seismic_version": seismic.version() if self.kind == "seismic" else None,
                "files": {
                    name: files.file_record(staging / name)
                    for name in (VECTORS_FILE, IDS_FILE, CORPUS_FILE, SEISMIC_FILE)
                    if (staging / name).is_file()
                },
            }
            (staging / MANIFEST_FILE).write_text(json_text.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            replace_dir(staging, path)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def manifest(self) -> dict[str, Any]:
        """The fields that describe this index (the files and versions are added when it is saved)."""
        return {
            "model": self.model_name,
            "identity": self.identity.to_dict() if self.identity else None,
            "dimension": self.dim,
            "metric": "dot",
            "count": len(self),
            "nnz": int(self.matrix.nnz),
            "kind": self.kind,
            "params": self.params,
            "document_prompt": self.document_prompt,
            "texts": "corpus",
        }

    @classmethod
    def load(cls, path: str | Path, model: str | Encoder | None = None) -> SparseIndex:
        """Read a sparse index directory, checking every file against the manifest.

        Args:
            path: The directory :meth:`save` wrote.
            model: Optional ``SparseEncoder`` (checked by the fingerprint of its weights and pipeline)
                or model name: an index made with another model is refused.

        Raises:
            IndexLoadError: a file is missing, corrupt or inconsistent (the message names it), or the
                model does not match (the message names both sides).
            sbert.embeddings.identity.ModelMismatchError: the model's weights or pipeline differ.
        """
        path = Path(path)
        manifest = read_sparse_manifest(path / MANIFEST_FILE)
        identity = files.check_model(manifest, model, path)
        index = cls(manifest["dimension"], manifest["kind"], manifest["model"], manifest["params"], identity)
        index.matrix = _read_vectors(path / VECTORS_FILE, manifest)
        index.ids = np.array(files.read_ids(path / IDS_FILE, manifest))
        index.texts = files.read_corpus(path / CORPUS_FILE, index.ids, manifest)
        index.document_prompt = manifest.get("document_prompt")
        if index.kind == "seismic":
            index.engine = _read_seismic(path, manifest, index)
        return index


def _top_k(rows: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per line, the ``k`` best of ``scores`` (queries, candidates): score descending, then lower row.

    ``argpartition`` alone would pick arbitrarily among scores equal to the k-th; every candidate at
    least as good as the k-th is kept and sorted instead, so the choice is the one a full sort makes.
    """
    kept_rows = np.empty((len(scores), k), dtype=np.int64)
    kept_scores = np.empty((len(scores), k), dtype=np.float64)
    for line, (row_ids, row) in enumerate(zip(rows, scores, strict=True)):
        if row.shape[0] > k:
            kth = row[np.argpartition(-row, k - 1)[k - 1]]
            candidates = np.flatnonzero(row >= kth)
        else:
            candidates = np.arange(row.shape[0])
        order = candidates[np.lexsort((row_ids[candidates], -row[candidates]))][:k]
        kept_rows[line], kept_scores[line] = row_ids[order], row[order]
    return kept_rows, kept_scores


def is_sparse_index(path: str | Path) -> bool:
    """Whether ``path`` holds a sparse index (its manifest says so); no file is checked."""
    from sbert.base.files import read_json

    manifest = read_json(Path(path) / MANIFEST_FILE, or_none=True)
    return isinstance(manifest, dict) and manifest.get("format") == SPARSE_FORMAT


def read_sparse_manifest(path: Path) -> dict[str, Any]:
    """The manifest of a sparse index, with every field loading needs; errors name the file and field."""
    required = ("dimension", "count", "kind", "params", "model", "files")
    return files.read_index_manifest(path, SPARSE_FORMAT, required, SPARSE_KINDS)


def _record(path: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    record = manifest["files"].get(path.name)
    if record is None:
        raise IndexLoadError(f"{path.parent / MANIFEST_FILE}: lists no {path.name}; rebuild the index")
    return record


def _read_vectors(path: Path, manifest: dict[str, Any]) -> scipy.sparse.csr_matrix:
    files.check_file(path, _record(path, manifest))
    try:
        matrix = scipy.sparse.load_npz(path)  # np.load without pickle underneath
    except (ValueError, OSError) as error:
        raise IndexLoadError(f"{path}: cannot be read: {error}") from error
    expected = (manifest["count"], manifest["dimension"])
    if matrix.shape != expected:
        raise IndexLoadError(f"{path}: holds a {matrix.shape} matrix but {MANIFEST_FILE} says {expected}")
    return to_csr(matrix)


def _read_seismic(path: Path, manifest: dict[str, Any], index: SparseIndex) -> Any:
    engine_file = path / SEISMIC_FILE
    files.check_file(engine_file, _record(engine_file, manifest))
    try:
        engine = seismic.load(engine_file)
    except (OSError, ValueError, RuntimeError) as error:
        raise IndexLoadError(f"{engine_file}: Seismic cannot read it: {error}") from error
    indexed = int((np.diff(index.matrix.indptr) > 0).sum())  # Seismic skips empty documents
    if engine.len != indexed:
        raise IndexLoadError(f"{engine_file}: holds {engine.len} documents, {VECTORS_FILE} {indexed}")
    return engine
