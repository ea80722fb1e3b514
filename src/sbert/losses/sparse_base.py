"""SparseLoss: what every sparse objective shares — embedding a batch's columns through a
:class:`~sbert.SparseEncoder` as sentence-transformers' sparse losses do.

Column 0 (the anchor, usually a query) is embedded in its own forward pass and every other column
(positives, hard negatives: documents) in one pass together, as sentence-transformers'
``embed_columns(separate_first=True)``; on a model with query and document routes (the Router of an
inference-free SPLADE) column 0 takes the query route and the others the document route.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from sbert.base.distributed import Distributed, gather_with_grad
from sbert.losses.base import example_texts


class SparseLoss(nn.Module):
    """Base class: ``forward(examples) -> scalar``; subclasses implement
    :meth:`compute_loss_from_embeddings` (sentence-transformers' name and signature).

    Args:
        model: The sparse encoder being trained (``model.tokenize(texts)`` and
            ``model(features)["sentence_embedding"]``, ``(batch, vocab)`` with gradients).

    The trainer's protocol (:class:`sbert.training.Trainer`): ``forward(examples)`` and ``model``.
    """

    # Whether the loss ranks a batch's examples against each other: then under DDP it gathers every
    # rank's embeddings unless ``gather_across_ranks`` is False (sentence-transformers'
    # ``gather_across_devices``).
    in_batch_negatives = False

    def __init__(self, model: Any) -> None:
        super().__init__()
        if not (hasattr(model, "tokenize") and callable(model)):
            raise TypeError(f"{type(self).__name__} trains a SparseEncoder, not {type(model).__name__}")
        self.model = model
        self.gather_across_ranks = True

    @property
    def replicated_loss(self) -> bool:
        """Whether every rank computes the whole global batch's loss from gathered embeddings."""
        return self.in_batch_negatives and self.gather_across_ranks and Distributed.current() is not None

    def gather(self, local: Tensor) -> Tensor:
        """Every rank's rows of ``local`` in rank order when :attr:`replicated_loss`, else ``local``."""
        return gather_with_grad(local) if self.replicated_loss else local

    def embed_texts(self, texts: Sequence[str], task: str | None = None) -> Tensor:
        """``(len(texts), vocab)`` float32 vectors with gradients; ``task`` ("query"/"document")
        picks a Router model's route (a model without routes runs itself for every task)."""
        encoder = self.model
        if task is not None and task in getattr(self.model, "route_names", ()):
            encoder = self.model.route(task)
        device = _device(encoder)
        features = encoder.tokenize(list(texts))
        features = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in features.items()}
        return encoder(features)["sentence_embedding"].float()  # (batch, vocab)

    def embed_columns(self, examples: Sequence[Any]) -> list[Tensor]:
        """One ``(batch, vocab)`` tensor per column: column 0 as queries on its own, the others as
        documents in one forward pass."""
        columns = [list(column) for column in zip(*(example_texts(e) for e in examples))]
        queries = self.embed_texts(columns[0], task="query")
        if len(columns) == 1:
            return [queries]
        documents = self.embed_texts([text for column in columns[1:] for text in column], task="document")
        return [queries, *torch.split(documents, len(examples))]

    def forward(self, examples: Sequence[Any]) -> Tensor:
        if not examples:
            raise ValueError(f"{type(self).__name__}: empty batch")
        return self.compute_loss_from_embeddings(self.embed_columns(examples))

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """The scalar loss given the columns' embeddings (anchors first)."""
        raise NotImplementedError


def _device(model: Any) -> torch.device:
    device = getattr(model, "device", None)
    if isinstance(device, torch.device):
        return device
    return next(model.parameters()).device
