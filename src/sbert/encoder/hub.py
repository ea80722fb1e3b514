"""Moved to :mod:`sbert.model.hub` (every model kind loads by name); this path is kept for existing imports."""

from sbert.model.hub import DEFAULT_MODEL, bundled_model_path, download, is_hub_id, resolve_model_path

__all__ = ["DEFAULT_MODEL", "bundled_model_path", "download", "is_hub_id", "resolve_model_path"]
