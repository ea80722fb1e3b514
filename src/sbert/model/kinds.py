"""The one table that tells a model folder's kind (dense, static, sparse, cross-encoder), read
without loading it, and the class that loads each: what a command or a server asks to pick the
class, and what a class says when handed another kind's folder.

Example:
    >>> from sbert.model.hub import bundled_model_path
    >>> kind = folder_kind(bundled_model_path())
    >>> kind.name, kind.loader
    ('dense', 'sbert.SentenceEncoder.from_pretrained')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.model.folder import SETTINGS_FILE


@dataclass(frozen=True)
class Kind:
    """A kind of model folder: its name, what it makes and the call that loads it."""

    name: str
    makes: str
    loader: str

    def hint(self) -> str:
        """What a loader of another kind says of this folder: what it makes and what loads it."""
        return f"it makes {self.makes}: load it with {self.loader}"


KINDS = {
    kind.name: kind
    for kind in (
        Kind("dense", "dense vectors", "sbert.SentenceEncoder.from_pretrained"),
        Kind("static", "dense vectors from a token table", "sbert.SentenceEncoder.from_pretrained"),
        Kind("sparse", "sparse vectors", "sbert.SparseEncoder.from_pretrained"),
        Kind("cross-encoder", "a score per sentence pair", "sbert.CrossEncoder"),
    )
}

# The module types that only a sparse model lists (in modules.json or a Router's config).
SPARSE_MODULES = ("MLMTransformer", "SpladePooling", "SparseStaticEmbedding", "SparseAutoEncoder")
CROSS_ENCODER_FILE = "sbert_cross_encoder.json"  # sbert's own cross-encoder settings


def folder_kind(path: Path) -> Kind:
    """The kind of the local model folder ``path``, from its files alone.

    Sparse: sentence-transformers' ``model_type: SparseEncoder``, else a sparse module in
    ``modules.json`` or a Router's config (a plain ``*ForMaskedLM`` folder says nothing: BERT itself
    is one, so it counts as dense). Cross-encoder: sbert's ``sbert_cross_encoder.json``, a
    ``model_type: CrossEncoder``, or a plain Hugging Face ``*ForSequenceClassification`` folder.
    Static: ``modules.json`` lists a ``StaticEmbedding``. Else dense.
    """
    model_type = _settings(path).get("model_type")
    if model_type == "SparseEncoder":
        return KINDS["sparse"]
    listed = [path / "modules.json", *path.glob("*/router_config.json"), path / "router_config.json"]
    texts = [file.read_text(encoding="utf-8", errors="replace") for file in listed if file.is_file()]
    if any(name in text for text in texts for name in SPARSE_MODULES):
        return KINDS["sparse"]
    if model_type == "CrossEncoder" or (path / CROSS_ENCODER_FILE).is_file() or _classifier(path):
        return KINDS["cross-encoder"]
    if any("StaticEmbedding" in text for text in texts):
        return KINDS["static"]
    return KINDS["dense"]


def refuse(what: str, kind: str, where: Path | str) -> None:
    """Raise the one message for a folder (or a module it lists) of another ``kind``: ``where``
    names the file, ``what`` what it holds."""
    raise ModelLoadError(f"{where}: {what}: {KINDS[kind].hint()}")


def _settings(path: Path) -> dict:
    settings = read_json(path / SETTINGS_FILE, or_none=True)
    return settings if isinstance(settings, dict) else {}


def _classifier(path: Path) -> bool:
    """A plain Hugging Face sequence classifier (no modules.json)."""
    if (path / "modules.json").is_file():
        return False
    config = read_json(path / "config.json", or_none=True)
    architectures = config.get("architectures") if isinstance(config, dict) else None
    return any(str(name).endswith("ForSequenceClassification") for name in architectures or [])
