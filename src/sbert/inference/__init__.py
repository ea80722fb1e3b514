"""Inference engines: how ``encode()`` runs the network at a given numeric precision."""

from sbert.inference.fast_bert import FastBert
from sbert.inference.precision import PRECISIONS, cpu_has_native_bf16, resolve_precision

__all__ = ["PRECISIONS", "FastBert", "cpu_has_native_bf16", "resolve_precision"]
