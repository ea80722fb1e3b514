"""SentenceLoss: the shared encoder that every siamese / triplet objective embeds its sentences with.

A loss owns the ONE encoder (``self.model``); every column of a pair or triplet goes through that same
module, so the weights are tied by construction, as in the paper's siamese and triplet networks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from sbert.base.distributed import Distributed, gather_with_grad
from sbert.encoder.model import SentenceEncoder


def example_texts(example: Any) -> tuple[str, ...]:
    """The sentences of a record: (sentence1, sentence2) of a pair, (anchor, positive, negative) of a
    triplet, (anchor, positive, negative_1, ..., negative_k) of a :class:`~sbert.data.NegativesTuple`."""
    if hasattr(example, "negatives"):
        return (example.anchor, example.positive, *example.negatives)
    if hasattr(example, "anchor"):
        return (example.anchor, example.positive, example.negative)
    if hasattr(example, "sentence1"):
        return (example.sentence1, example.sentence2)
    raise TypeError(f"{type(example).__name__} is not a pair or a triplet record")


class SentenceLoss(nn.Module):
    """Base class: ``forward(examples) -> scalar loss``; subclasses implement :meth:`loss`.

    Args:
        model: The shared sentence encoder; it is what training saves.

    The trainer's protocol (see :class:`sbert.training.Trainer`) asks for ``forward(examples)``,
    ``model`` and, optionally, ``lengths(examples)`` for grouping batches by token length.
    """

    # Whether the loss sees the model's output after its Normalize layer (if it has one).
    normalized_embeddings = True
    # Whether the loss compares the examples of a batch with each other (in-batch negatives): then,
    # under DDP, it gathers the embeddings of every rank unless ``gather_across_ranks`` is False.
    in_batch_negatives = False

    def __init__(self, model: SentenceEncoder) -> None:
        super().__init__()
        self.model = model
        # Token ids by text, filled by lengths(): the trainer tokenizes the data set once, not every step.
        self._token_ids: dict[str, Sequence[int]] = {}
        self.gather_across_ranks = True
        # Set by the trainer for a run (sbert.training.embedder): embeds texts on real tokens only,
        # from host tensors prepared ahead. None: the padded model, as encode-time code expects.
        self.embedder: Callable[[Sequence[str], bool], Tensor] | None = None

    @property
    def replicated_loss(self) -> bool:
        """Whether every rank computes the whole global batch's loss from gathered embeddings."""
        return self.in_batch_negatives and self.gather_across_ranks and Distributed.current() is not None

    def gather(self, local: Tensor) -> Tensor:
        """Every rank's rows of ``local`` in rank order when :attr:`replicated_loss`, else ``local``.

        Each column (anchors, positives, negatives) is gathered on its own, so row i of every
        gathered column still belongs to example i of the global batch: hard negatives stay aligned
        with their anchors.
        """
        return gather_with_grad(local) if self.replicated_loss else local

    def lengths(self, examples: Sequence[Any]) -> list[int]:
        """Token length of each example: its longest sentence, which sets the padding of its batch."""
        texts = list(dict.fromkeys(text for e in examples for text in example_texts(e)))
        self._token_ids = dict(zip(texts, self.model.token_ids(texts).ids))
        return [max(len(self._token_ids[text]) for text in example_texts(e)) for e in examples]

    def token_ids(self, texts: Sequence[str]) -> list[Sequence[int]]:
        """Token ids of each text, from the cache that :meth:`lengths` filled where possible."""
        missing = [text for text in texts if text not in self._token_ids]
        fresh = dict(zip(missing, self.model.token_ids(missing).ids)) if missing else {}
        return [self._token_ids[text] if text in self._token_ids else fresh[text] for text in texts]

    def embed_columns(self, examples: Sequence[Any]) -> list[Tensor]:
        """Embed every column (e.g. u and v) in one forward pass of the shared encoder: (batch, dim) each."""
        columns = list(zip(*(example_texts(e) for e in examples)))
        texts = [text for column in columns for text in column]
        embeddings = self.embed_texts(texts)  # (columns * batch, dim)
        return list(torch.split(embeddings, len(examples)))

    def embed_texts(self, texts: Sequence[str]) -> Tensor:
        """Float32 vectors ``(len(texts), dim)`` of ``texts``, with gradients, through the trainer's
        embedder when one is set."""
        if self.embedder is not None:
            return self.embedder(texts, self.normalized_embeddings)
        features = self.model.collate(self.token_ids(texts))
        return self.model(features, normalize=self.normalized_embeddings).float()

    def forward(self, examples: Sequence[Any]) -> Tensor:
        if not examples:
            raise ValueError(f"{type(self).__name__}: empty batch")
        return self.loss(examples, self.embed_columns(examples))

    def loss(self, examples: Sequence[Any], embeddings: list[Tensor]) -> Tensor:
        """The scalar loss of a batch given the embeddings of its columns."""
        raise NotImplementedError
