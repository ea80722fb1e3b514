"""Inference engines: how ``encode()`` runs the network at a given numeric precision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sbert.inference.precision import PRECISIONS, cpu_has_native_bf16, resolve_precision

if TYPE_CHECKING:
    from sbert.inference.fast_bert import FastBert

__all__ = ["PRECISIONS", "FastBert", "cpu_has_native_bf16", "resolve_precision"]


def __getattr__(name: str) -> Any:
    if name == "FastBert":  # imports torch: loaded on first use, not with the precision names
        from sbert.inference.fast_bert import FastBert

        return FastBert
    raise AttributeError(f"module 'sbert.inference' has no attribute {name!r}")
