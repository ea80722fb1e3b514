"""How a training step embeds its sentences: on real tokens only where the model allows it, with the
host's share of the work (token ids → tensors, pinned) done ahead of the device.

A loss of :mod:`sbert.losses` embeds a list of texts through ``loss.embedder`` when it is set (the
trainer sets it for the run), else through the padded model as before. :class:`TrainingEmbedder`
splits that work in two:

- :meth:`TrainingEmbedder.prepare` (host only, thread-safe): the texts' token ids, from the ids the
  loss tokenized once before training, as a batch of host tensors (pinned on CUDA), either the flat
  form of :func:`~sbert.inference.cuda.unpadded.unpadded_batch` (BERT) or the padded features (any other
  model). The trainer runs it for the next batch on a background thread (:mod:`.prefetch`) while
  the device computes this one.
- :meth:`TrainingEmbedder.__call__`: the copy to the device (non-blocking) and the differentiable
  forward pass, with its gradients.

The unpadded forward (:func:`~sbert.training.unpadded.unpadded_token_vectors`) runs the HF model's
own parameters, so gradients land where the optimizer and the checkpoint see them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from sbert.encoder.model import SentenceEncoder
from sbert.inference.cuda.unpadded import UnpaddedBatch, unpadded_batch
from sbert.inference.fast_bert import supports
from sbert.modules.transformer import Transformer
from sbert.training.autocast import TrainingPrecision
from sbert.training.unpadded import to_blocks, unpadded_token_vectors, varlen_attention

HostBatch = UnpaddedBatch | dict[str, Tensor]


def unpadded_supported(model: SentenceEncoder) -> bool:
    """Whether the model's token encoder can train on real tokens only (BERT, absolute positions,
    exact GELU: what :func:`~sbert.inference.fast_bert.supports` accepts)."""
    module = model.input_module
    return isinstance(module, Transformer) and supports(module.model)


@dataclass(frozen=True)
class EmbedderPlan:
    """What the embedder runs: the unpadded forward or the padded model, which attention, pinned
    host memory; ``reason`` says why (it goes to the training log)."""

    unpadded: bool
    varlen: bool
    pin: bool
    reason: str


def embedder_plan(model: SentenceEncoder, low_precision: bool, unpadded: bool | None = None) -> EmbedderPlan:
    """The plan on ``model``'s device: unpadded where supported (``unpadded=None``: on CUDA only,
    where padding costs device time; on CPUs length-grouped batches leave little padding and the
    padded model is what the CPU measurements stand on), variable-length attention on CUDA in
    fp16/bf16 (its flash kernels need them)."""
    device = model.device
    on_cuda = device.type == "cuda"
    supported = unpadded_supported(model)
    use = supported and (on_cuda if unpadded is None else unpadded)
    varlen = use and on_cuda and low_precision and varlen_attention() is not None
    if use:
        attention = "variable-length attention" if varlen else "attention in padded blocks per batch"
        reason = f"real tokens only (BERT), {attention}"
    elif not supported:
        reason = "padded batches grouped by length (only BERT with absolute positions trains unpadded)"
    else:
        reason = "padded batches grouped by length (the unpadded forward runs on CUDA)"
    return EmbedderPlan(unpadded=use, varlen=varlen, pin=on_cuda, reason=reason)


def run_plan(objective: torch.nn.Module, precision: TrainingPrecision) -> EmbedderPlan | None:
    """The embedder plan of a run, or ``None`` where the objective's model is no sentence encoder
    with a pooling layer (a cross-encoder's loss keeps its own forward pass)."""
    model: Any = getattr(objective, "model", None)
    if not (hasattr(model, "input_module") and hasattr(model, "pooling")):
        return None
    return embedder_plan(model, precision.dtype is not None)


class TrainingEmbedder:
    """``embedder(texts, normalize) -> (len(texts), dim)`` float32 vectors with gradients.

    Args:
        model: The encoder being trained.
        token_ids: The loss's ``token_ids`` (ids cached when the trainer asked for the lengths).
        plan: What to run (see :func:`embedder_plan`).
    """

    def __init__(
        self,
        model: SentenceEncoder,
        token_ids: Callable[[Sequence[str]], list[Sequence[int]]],
        plan: EmbedderPlan,
    ) -> None:
        self.model = model
        self.token_ids = token_ids
        self.plan = plan
        self.varlen = varlen_attention() if plan.varlen else None
        self._ready: dict[tuple[str, ...], Future[HostBatch]] = {}
        self._lock = threading.Lock()
        self.prepared_ahead = 0  # batches the step found ready: a test can see the prefetch ran

    def prepare(self, texts: Sequence[str]) -> HostBatch:
        """The host tensors of ``texts`` (no device work; safe on another thread)."""
        ids = self.token_ids(texts)
        if self.plan.unpadded:
            batch: HostBatch = unpadded_batch(ids)
            return batch.map(Tensor.pin_memory) if self.plan.pin else batch  # type: ignore[union-attr]
        features = self.model.input_module.collate(ids)  # (batch, longest) each
        return {k: v.pin_memory() for k, v in features.items()} if self.plan.pin else features

    def expect(self, texts: Sequence[str], future: Future[HostBatch]) -> None:
        """Register a batch being prepared elsewhere (the prefetch thread) for the step that embeds ``texts``."""
        with self._lock:
            self._ready[tuple(texts)] = future

    def wait(self) -> None:
        """Wait for every batch being prepared elsewhere."""
        with self._lock:
            pending = list(self._ready.values())
        for future in pending:
            future.exception()  # waits; an error is raised by the step that uses the batch

    def forget(self) -> None:
        with self._lock:
            self._ready.clear()

    def __call__(self, texts: Sequence[str], normalize: bool) -> Tensor:
        with self._lock:
            future = self._ready.pop(tuple(texts), None)
        if future is not None:
            self.prepared_ahead += 1
            host = future.result()
        else:  # not prefetched (CachedMNRL's mini-batches, a loss's own grouping): prepared now
            host = self.prepare(texts)
        device = self.model.device
        if isinstance(host, UnpaddedBatch):
            batch = host.map(lambda t: t.to(device, non_blocking=True))
            return self._unpadded(batch, normalize)
        features = {k: v.to(device, non_blocking=True) for k, v in host.items()}
        return self.model(features, normalize=normalize).float()  # (batch, dim)

    def _unpadded(self, batch: UnpaddedBatch, normalize: bool) -> Tensor:
        module: Any = self.model.input_module
        tokens = unpadded_token_vectors(module.model, batch, self.varlen)  # (total, hidden)
        block = to_blocks(tokens, batch)  # (batch, longest, hidden) for the pooling layer
        mask = batch.token_mask.long()  # (batch, longest)
        pooled = self.model.pooling(block, mask, 0)  # (batch, pooled dim)
        return self.model.after_pooling(pooled, normalize).float()  # (batch, dim)


def set_embedder(objective: torch.nn.Module, embedder: TrainingEmbedder | None) -> bool:
    """Give ``objective`` (and a loss it wraps, as Matryoshka does) the embedder; whether it takes one."""
    taken = False
    for module in objective.modules():
        if hasattr(module, "embedder"):
            setattr(module, "embedder", embedder)  # noqa: B010  # an nn.Module attribute mypy cannot see
            taken = True
    return taken
