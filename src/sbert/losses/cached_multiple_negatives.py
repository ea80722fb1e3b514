"""CachedMultipleNegativesRankingLoss: in-batch negatives of a large batch at a small batch's memory
(GradCache, Gao et al., 2021).

MNRL gets better with more negatives, that is with larger batches, but a batch's activations must
all be kept for the backward pass. GradCache splits the work: embed the whole batch in mini-batches
without keeping activations; compute the loss and its gradient with respect to the embeddings; then
embed each mini-batch again, with activations, and push that mini-batch's share of the cached
gradient through the network. The parameter gradients are those of plain MNRL on the whole batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from sbert.base.distributed import Distributed
from sbert.encoder.model import SentenceEncoder
from sbert.losses.base import example_texts
from sbert.losses.multiple_negatives import MultipleNegativesRankingLoss


@dataclass(frozen=True)
class RandomState:
    """PyTorch's random generators at one moment: the CPU's, and the device's where it is a GPU."""

    cpu: Tensor
    cuda: Tensor | None

    @classmethod
    def now(cls, device: torch.device) -> RandomState:
        return cls(torch.get_rng_state(), torch.cuda.get_rng_state(device) if device.type == "cuda" else None)

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state(self.cuda)


class CachedMultipleNegativesRankingLoss(MultipleNegativesRankingLoss):
    """:class:`MultipleNegativesRankingLoss` computed with GradCache, as sentence-transformers'
    ``CachedMultipleNegativesRankingLoss``: the same loss and gradients, memory of ``mini_batch_size``.

    Each mini-batch's random state (dropout) is recorded on the first pass and restored on the
    second, so both passes see the same network.

    Args:
        model: The shared encoder.
        scale: Inverse temperature of the softmax (20).
        mini_batch_size: Sentences embedded at once; memory grows with it, the result does not change.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data import Triplet
        >>> loss = CachedMultipleNegativesRankingLoss(SentenceEncoder.from_pretrained(), mini_batch_size=2)
        >>> batch = [Triplet("A man sleeps.", "A man is asleep.", "A man runs."),
        ...          Triplet("A dog barks.", "A dog makes noise.", "A cat is quiet.")]
        >>> loss(batch).backward()
    """

    def __init__(self, model: SentenceEncoder, scale: float = 20.0, mini_batch_size: int = 32) -> None:
        super().__init__(model, scale)
        if mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be at least 1, got {mini_batch_size}")
        self.mini_batch_size = mini_batch_size

    def forward(self, examples: Sequence[Any]) -> Tensor:
        if not examples:
            raise ValueError(f"{type(self).__name__}: empty batch")
        if Distributed.current() is not None:
            raise RuntimeError("the cached MNRL loss does not run under torchrun yet; use --loss mnrl there")
        columns = [list(column) for column in zip(*(example_texts(e) for e in examples))]
        texts = [text for column in columns for text in column]
        chunks = [texts[i : i + self.mini_batch_size] for i in range(0, len(texts), self.mini_batch_size)]
        states: list[RandomState] = []
        with torch.no_grad():  # pass 1: every embedding, no activations kept
            parts = []
            for chunk in chunks:
                states.append(RandomState.now(self.model.device))
                parts.append(self._embed(chunk))
        embeddings = torch.cat(parts).requires_grad_()  # (columns · batch, dim)
        with torch.enable_grad():
            loss = self.loss(examples, list(torch.split(embeddings, len(examples))))
            loss.backward()  # the gradient with respect to the embeddings only
        cached = embeddings.grad
        assert cached is not None
        surrogate = loss.detach().requires_grad_()
        surrogate.register_hook(lambda grad: self._backward(chunks, states, cached, grad))
        return surrogate

    def _backward(
        self, chunks: list[list[str]], states: list[RandomState], cached: Tensor, grad: Tensor
    ) -> Tensor:
        """Pass 2, when the trainer calls ``backward()``: each mini-batch again, with activations,
        its share of the cached gradient pushed through the network."""
        start = 0
        outer_state = RandomState.now(self.model.device)
        with torch.enable_grad():
            for chunk, state in zip(chunks, states):
                state.restore()  # the same dropout masks as pass 1
                embedded = self._embed(chunk)  # (mini-batch, dim)
                share = cached[start : start + len(chunk)] * grad
                (embedded * share).sum().backward()
                start += len(chunk)
        outer_state.restore()
        return grad

    def _embed(self, texts: list[str]) -> Tensor:
        return self.embed_texts(texts)
