"""The static tier: one stored vector per token, averaged; distilled from any model sbert loads."""

from sbert.static.encoder import StaticEncoder

__all__ = ["StaticEncoder"]
