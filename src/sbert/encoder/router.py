"""Moved to :mod:`sbert.model.router` (dense and sparse models route alike); this path is kept for existing imports."""

from sbert.model.router import RouteMethods, RouterEncoder

__all__ = ["RouteMethods", "RouterEncoder"]
