"""The files of an index directory: manifest, ids, texts and checksums, each checked on read.

An index directory holds

- ``index.faiss``: the FAISS index (vectors unit length when the metric is cosine);
- ``ids.npy``: the corpus id of each vector, in FAISS order (int64, read without pickle, memory-mapped);
- ``corpus.jsonl``: one ``{"id": ..., "text": ...}`` line per vector, when the texts were given (an
  index built from a store looks texts up in the store instead);
- ``rescore.npy``: compressed kinds only, the vectors that re-rank candidates (memory-mapped);
- ``manifest.json``: the model identity, dimension, metric and normalisation, count, kind, parameters,
  versions, and the size and SHA-256 of every other file.

It is written under a temporary name and renamed into place, so a failed save leaves the previous
index intact.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.base import json_text
from sbert.base.contracts import Encoder
from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.index.kinds import COMPRESSED_KINDS, INDEX_KINDS

if TYPE_CHECKING:
    from sbert.embeddings.identity import ModelIdentity
from sbert.base.outputs import OutputKind

FORMAT_VERSION = 2
FAISS_FILE, IDS_FILE, CORPUS_FILE, MANIFEST_FILE = "index.faiss", "ids.npy", "corpus.jsonl", "manifest.json"
RESCORE_FILE = "rescore.npy"


DENSE_INDEX_FORMAT, SPARSE_INDEX_FORMAT = "sbert-index", "sbert-sparse-index"  # manifest.json's "format"
INDEX_FORMATS = {DENSE_INDEX_FORMAT: "index", SPARSE_INDEX_FORMAT: "sparse index"}  # what each is called
_OTHER_NAMES = {DENSE_INDEX_FORMAT: "dense index", SPARSE_INDEX_FORMAT: "sparse index"}  # told apart
_LOADERS = {DENSE_INDEX_FORMAT: "VectorIndex", SPARSE_INDEX_FORMAT: "SparseIndex"}


class IndexLoadError(ModelLoadError):
    """An index directory is missing a file, is corrupt, or does not match the model."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest, with every field that loading needs; the error names the file and the field."""
    required = ("dimension", "metric", "count", "kind", "params", "faiss_bytes", "faiss_sha256", "model")
    return read_index_manifest(path, DENSE_INDEX_FORMAT, required, INDEX_KINDS)


def read_index_manifest(
    path: Path, index_format: str, required: tuple[str, ...], kinds: Iterable[str]
) -> dict[str, Any]:
    """The manifest of an index of ``index_format`` (dense or sparse), with its ``required`` fields
    and a ``kind`` among ``kinds``; the error names the file and the field."""
    what = INDEX_FORMATS[index_format]
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise IndexLoadError(f"{path}: missing; is {path.parent} an sbert {what} directory?") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise IndexLoadError(f"{path}: not valid JSON: {error}") from error
    found = manifest.get("format") if isinstance(manifest, dict) else None
    if found != index_format:
        other = f" (a {_OTHER_NAMES[found]}: load it with {_LOADERS[found]})" if found in _LOADERS else ""
        raise IndexLoadError(f"{path}: not an sbert {what} manifest{other}")
    missing = [key for key in required if key not in manifest]
    if missing:
        raise IndexLoadError(f"{path}: missing field(s) {', '.join(missing)}")
    if manifest["kind"] not in kinds:
        raise IndexLoadError(
            f"{path}: kind {manifest['kind']!r} is not {'an' if what == 'index' else 'a'} {what} kind "
            f"({', '.join(kinds)}); "
            "was the manifest edited? Rebuild the index."
        )
    if not isinstance(manifest["params"], dict) or not isinstance(manifest["count"], int):
        raise IndexLoadError(f"{path}: params must be an object and count an integer")
    return manifest


def check_file(path: Path, record: dict[str, Any]) -> None:
    """Refuse a missing file, or one whose size or SHA-256 differs from its manifest ``record``."""
    if not path.is_file():
        raise IndexLoadError(f"{path}: missing")
    size = path.stat().st_size
    if size != record["bytes"] or sha256(path) != record["sha256"]:
        raise IndexLoadError(
            f"{path}: {size} bytes, checksum does not match {MANIFEST_FILE} "
            f"({record['bytes']} bytes): the file is corrupt or half-written"
        )


def file_record(path: Path) -> dict[str, Any]:
    """Size and SHA-256 of a file, as the manifest records them."""
    return {"bytes": path.stat().st_size, "sha256": sha256(path)}


def _is_index(folder: Path) -> bool:
    manifest = read_json(folder / MANIFEST_FILE, or_none=True)
    # A sparse index (sbert.index.sparse_index) is an index too: either kind may replace the other.
    return isinstance(manifest, dict) and manifest.get("format") in INDEX_FORMATS


SPARSE_FILES = frozenset({"vectors.npz", "seismic.index.seismic"})  # sbert.index.sparse_index's own
INDEX_FILES = frozenset({FAISS_FILE, IDS_FILE, CORPUS_FILE, RESCORE_FILE, MANIFEST_FILE}) | SPARSE_FILES
# An index is swapped in whole: a rebuild refuses a folder holding files of the user's.
INDEX = OutputKind("index", recognise=_is_index, owns=lambda folder, name: name in INDEX_FILES)


def read_ids(path: Path, manifest: dict[str, Any]) -> np.ndarray:
    """The corpus ids in FAISS order, memory-mapped: a 40M-vector index does not hold 320 MB of them.

    Checked against the manifest's size and SHA-256 first, so a damaged file is blamed on itself,
    not on the corpus whose ids it no longer matches.
    """
    count = manifest["count"]
    record = manifest.get("files", {}).get(IDS_FILE)
    if record is not None:
        check_file(path, record)
    try:
        ids = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError as error:
        raise IndexLoadError(f"{path}: missing") from error
    except (ValueError, OSError, EOFError) as error:
        raise IndexLoadError(f"{path}: cannot be read: {error}") from error
    if ids.shape != (count,) or ids.dtype.kind not in "iu":
        raise IndexLoadError(f"{path}: holds {ids.dtype} of shape {ids.shape}, expected {count} integer ids")
    return ids if ids.dtype == np.int64 else ids.astype(np.int64)


def read_corpus(path: Path, ids: np.ndarray, manifest: dict[str, Any]) -> list[str | None]:
    """The texts of ``corpus.jsonl``, checked against the manifest's size and SHA-256 first: an
    edited corpus would serve texts the vectors were not made from."""
    record = manifest.get("files", {}).get(CORPUS_FILE)
    if record is not None:
        check_file(path, record)
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


def write_texts(staging: Path, ids: np.ndarray, texts: list[str | None] | None) -> None:
    """``corpus.jsonl`` for an index that holds its texts (none for one that reads them from a store)."""
    if texts is None:
        return
    with (staging / CORPUS_FILE).open("w", encoding="utf-8") as handle:
        for corpus_id, text in zip(np.asarray(ids).tolist(), texts):
            handle.write(json_text.dumps({"id": corpus_id, "text": text}, ensure_ascii=False) + "\n")


def commit(staging: Path, path: Path, faiss_index: Any, fields: dict[str, Any]) -> None:
    """Write the FAISS index and the manifest into ``staging``, then swap it in at ``path``.

    Raises:
        OSError: the FAISS file cannot be written (a full disk, say); the message names the file and
            says that the previous index at ``path`` is untouched.
    """
    import faiss

    from sbert._version import __version__
    from sbert.base.files import replace_dir

    faiss_file = staging / FAISS_FILE
    try:
        if fields["kind"].startswith("binary"):
            faiss.write_index_binary(faiss_index, str(faiss_file))
        else:
            faiss.write_index(faiss_index, str(faiss_file))
    except RuntimeError as error:
        reason = str(error).rsplit(": ", 1)[-1].strip() or "write failed"
        raise OSError(
            f"{faiss_file}: FAISS could not write the index ({reason}); "
            f"the previous index at {path} is untouched"
        ) from None
    manifest = {
        "format": "sbert-index",
        "format_version": FORMAT_VERSION,
        **fields,
        "sbert_version": __version__,
        "faiss_version": faiss.__version__,
        "faiss_bytes": faiss_file.stat().st_size,
        "faiss_sha256": sha256(faiss_file),
        "files": {
            name: file_record(staging / name)
            for name in (IDS_FILE, CORPUS_FILE, RESCORE_FILE)
            if (staging / name).is_file()
        },
    }
    (staging / MANIFEST_FILE).write_text(json_text.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    replace_dir(staging, path)


def read_faiss(path: Path, manifest: dict[str, Any], expected_class: str) -> Any:
    """The FAISS index, checksummed, memory-mapped where FAISS can, of the class the kind implies."""
    import faiss

    faiss_file = path / FAISS_FILE
    check_file(faiss_file, {"bytes": manifest["faiss_bytes"], "sha256": manifest["faiss_sha256"]})
    binary = manifest["kind"].startswith("binary")
    reader = faiss.read_index_binary if binary else faiss.read_index
    # Compressed kinds serve from a memory map: only the pages a query touches become resident.
    flags = faiss.IO_FLAG_MMAP if manifest["kind"] in COMPRESSED_KINDS else 0
    try:
        faiss_index = reader(str(faiss_file), flags)
    except RuntimeError as error:
        raise IndexLoadError(f"{faiss_file}: FAISS cannot read it: {str(error).splitlines()[0]}") from error
    found = type(faiss_index).__name__
    if found != expected_class:
        raise IndexLoadError(
            f"{faiss_file}: holds a FAISS {found}, but {MANIFEST_FILE} says kind {manifest['kind']!r} "
            f"({expected_class}); was the manifest edited? Rebuild the index."
        )
    dim = faiss_index.d // 8 if binary else faiss_index.d
    for what, value, expected in (
        ("vectors", faiss_index.ntotal, manifest["count"]),
        ("dimension", dim, -(-manifest["dimension"] // 8) if binary else manifest["dimension"]),
    ):
        if value != expected:
            raise IndexLoadError(f"{faiss_file}: holds {what} {value} but {MANIFEST_FILE} says {expected}")
    return faiss_index


def read_rescore(path: Path, manifest: dict[str, Any]) -> Any:
    """The memory-mapped rescoring vectors, checked against the manifest."""
    from sbert.embeddings.quantization import QuantizationRanges
    from sbert.index.rescoring import RescoreVectors

    rescore_file = path / RESCORE_FILE
    record = manifest.get("files", {}).get(RESCORE_FILE)
    if record is None:
        raise IndexLoadError(
            f"{path / MANIFEST_FILE}: kind {manifest['kind']} re-scores but lists no {RESCORE_FILE}"
        )
    check_file(rescore_file, record)
    ranges = None
    if manifest.get("rescore_ranges"):
        try:
            ranges = QuantizationRanges.from_dict(manifest["rescore_ranges"], f"{path / MANIFEST_FILE}")
            ranges.check(manifest["dimension"], where=str(path / MANIFEST_FILE))
        except ValueError as error:
            raise IndexLoadError(str(error)) from None
    try:
        return RescoreVectors.open(
            rescore_file, manifest["rescore"], ranges, manifest["count"], manifest["dimension"]
        )
    except ValueError as error:
        raise IndexLoadError(str(error)) from None


def check_model(manifest: dict[str, Any], model: str | Encoder | None, path: Path) -> ModelIdentity | None:
    """Refuse an index made with another model, pipeline or dimension; return the recorded identity.

    A ``SentenceEncoder`` is checked by the fingerprint of its weights and pipeline
    (:func:`sbert.embeddings.identity.check_same_model`): the same weights under another name pass, mean pooling
    against CLS pooling does not. A name (or a model object without weights) is checked by name.
    """
    from sbert.embeddings.identity import ModelIdentity, check_same_model

    where = str(path / MANIFEST_FILE)
    identity = ModelIdentity.from_dict(manifest["identity"], where) if manifest.get("identity") else None
    if model is None:
        return identity
    if identity is not None and hasattr(model, "state_dict"):
        check_same_model(identity, model, where)  # a SentenceEncoder: its weights are what is compared
    else:
        name = model if isinstance(model, str) else getattr(model, "name", None)
        if name is not None and manifest["model"] is not None and name != manifest["model"]:
            raise IndexLoadError(
                f"{where}: the index was built with model {manifest['model']!r}, but the model given is {name!r}"
            )
    dim = getattr(model, "dim", None)
    expected = manifest.get("truncated_from") or manifest["dimension"]  # a prefix's model gives more
    if dim is not None and dim != expected:
        raise IndexLoadError(
            f"{where}: the index holds vectors of a {expected}-d model, but the model gives {dim}-d vectors"
        )
    return identity
