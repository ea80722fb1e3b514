"""The MLM head and SPLADE pooling fused, over the real tokens of a batch only.

sentence-transformers computes a SPLADE vector as its modules are written: the MLM head over every
padded position, a ``(batch, seq, vocab)`` logits tensor (117 MB for 32 sentences of 30 tokens and
BERT's 30,522 words), then ``x · mask``, ``relu``, ``log1p`` and the max (or sum) over positions, each a
full pass over that tensor. Those passes cost more than the matrix product itself on the measured CPU
(``benchmarks/sparse_speed.py``).

:class:`FusedSpladeHead` computes the same vectors without that tensor. The head's transform (dense,
GELU, LayerNorm) runs on the real tokens only; the decoder runs one block of the vocabulary at a
time, and each block of logits, which stays in the CPU's cache, is reduced per sentence at once:

- ``max`` pooling takes the per-sentence max of the raw products and adds the bias and the activation
  once per sentence, not once per token: ``relu`` and ``log1p`` are non-decreasing, so the max of the
  activated logits is the activation of the max logit, and padding (zeros after ``relu``) never
  exceeds a real token's value. The vectors are sentence-transformers' to float32 rounding.
- ``sum`` pooling activates each block and sums it per sentence.

In bf16 the decoder's inputs and its products are bf16 (float32 accumulation inside the product);
the transform, the bias and the activation stay float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

POOLING_STRATEGIES = ("max", "sum")
ACTIVATIONS = ("relu", "log1p_relu")
# A block of the vocabulary and a chunk of tokens small enough that one block of logits
# (chunk × block, 2 MB in float32) stays in cache while it is reduced (benchmarks/sparse_speed.py
# --tune on the measured CPU: blocks of 2,048 ran 10× faster than the unblocked product plus passes).
VOCAB_BLOCK = 2048
CHUNK_TOKENS = 256


def fusable(mlm: Any) -> bool:
    """Whether :class:`FusedSpladeHead` reproduces ``mlm``'s head: a BERT-style MLM head (a
    ``transform`` of dense, activation and LayerNorm, then a linear decoder to the vocabulary)."""
    predictions = getattr(getattr(mlm, "cls", None), "predictions", None)
    transform = getattr(predictions, "transform", None)
    decoder = getattr(predictions, "decoder", None)
    return (
        transform is not None
        and all(hasattr(transform, name) for name in ("dense", "transform_act_fn", "LayerNorm"))
        and isinstance(decoder, torch.nn.Linear)
    )


class FusedSpladeHead:
    """An MLM head and SPLADE pooling, token vectors of real tokens → sentence vectors ``(n, vocab)``.

    Args:
        mlm: A Hugging Face ``*ForMaskedLM`` with a BERT-style head (:func:`fusable`); its weights are
            copied (and converted) now, so build a new head after the weights change.
        pooling_strategy: ``"max"`` or ``"sum"`` (sentence-transformers' ``SpladePooling``).
        activation: ``"relu"`` (``log1p(relu(x))``) or ``"log1p_relu"`` (``log1p`` once more).
        dtype: The decoder's dtype, ``torch.float32`` or ``torch.bfloat16``.

    Examples:
        >>> from transformers import BertConfig, BertForMaskedLM
        >>> _ = torch.manual_seed(0)
        >>> config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
        ...                     num_attention_heads=2, intermediate_size=16)
        >>> head = FusedSpladeHead(BertForMaskedLM(config).eval(), "max", "relu", torch.float32)
        >>> head(torch.randn(5, 8), [2, 3]).shape  # two sentences of 2 and 3 tokens
        torch.Size([2, 50])
    """

    def __init__(self, mlm: Any, pooling_strategy: str, activation: str, dtype: torch.dtype) -> None:
        if not fusable(mlm):
            raise ValueError(f"{type(mlm).__name__} has no BERT-style MLM head to fuse")
        if pooling_strategy not in POOLING_STRATEGIES:
            raise ValueError(
                f"pooling_strategy must be one of {POOLING_STRATEGIES}, not {pooling_strategy!r}"
            )
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, not {activation!r}")
        if dtype not in (torch.float32, torch.bfloat16):
            raise ValueError(f"the fused head computes in float32 or bfloat16, not {dtype}")
        self.strategy, self.activation, self.dtype = pooling_strategy, activation, dtype
        predictions = mlm.cls.predictions
        self.transform = predictions.transform  # float32, a few hundred FLOPs a token: run as it is
        decoder = predictions.decoder
        with torch.no_grad():
            # (hidden, vocab), contiguous: a block of the vocabulary is a column slice of rows.
            self.weight = decoder.weight.detach().t().contiguous().to(dtype)
            bias = decoder.bias if decoder.bias is not None else torch.zeros(decoder.out_features)
            self.bias = bias.detach().float().clone()  # (vocab,)
        self.vocab_size = int(self.weight.shape[1])

    def __call__(self, hidden: Tensor, lengths: Sequence[int]) -> Tensor:
        """Sentence vectors ``(len(lengths), vocab)``, float32, of ``hidden`` ``(tokens, hidden)``:
        the last layer's vectors of each sentence's real tokens, sentence after sentence."""
        if sum(lengths) != hidden.shape[0] or min(lengths, default=1) < 1:
            raise ValueError(
                f"lengths {list(lengths)[:8]}... must be positive and add up to the {hidden.shape[0]} tokens"
            )
        out = torch.empty((len(lengths), self.vocab_size), dtype=torch.float32)
        sizes = torch.tensor(lengths)
        starts = torch.cumsum(sizes, 0) - sizes
        # Sentences of like length side by side: a chunk is padded to its longest, and little is wasted.
        order = torch.argsort(sizes, descending=True, stable=True)
        with torch.inference_mode():
            tokens = self.transform(hidden.float()).to(self.dtype)  # (tokens, hidden)
            in_order = bool((order == torch.arange(len(order))).all())  # encode()'s batches are sorted
            for group in _chunks(sizes[order].tolist(), CHUNK_TOKENS):
                rows = order[group]
                if in_order:
                    self._pool(tokens, starts[rows], sizes[rows], out[group])
                else:
                    out[rows] = self._pool(tokens, starts[rows], sizes[rows])
        return out

    def _pool(self, tokens: Tensor, starts: Tensor, sizes: Tensor, pooled: Tensor | None = None) -> Tensor:
        """Vectors ``(sentences, vocab)`` of the sentences whose tokens start at ``starts``, block by
        block, written into ``pooled`` where given.

        The sentences' tokens are laid out ``(sentences, longest)``; a padding slot repeats the
        sentence's first token, which leaves its max unchanged and is masked out of its sum. The
        reduction over a block is then one vectorised ``amax`` (or a batched product with the mask).
        """
        longest = int(sizes.max())
        offsets = torch.arange(longest)  # (longest,)
        real = offsets < sizes[:, None]  # (sentences, longest)
        index = starts[:, None] + torch.where(real, offsets, 0)  # (sentences, longest)
        rows = tokens[index.reshape(-1)]  # (sentences · longest, hidden)
        shape = (len(sizes), longest, -1)
        weights = real.to(torch.float32)[:, None, :]  # (sentences, 1, longest), for sum
        if pooled is None:
            pooled = torch.empty((len(sizes), self.vocab_size), dtype=torch.float32)
        for begin in range(0, self.vocab_size, VOCAB_BLOCK):
            end = min(begin + VOCAB_BLOCK, self.vocab_size)
            products = torch.mm(rows, self.weight[:, begin:end]).view(shape)  # (sentences, longest, block)
            if self.strategy == "max":
                # Bias and activation are non-decreasing per column: they commute with the max.
                pooled[:, begin:end] = products.amax(dim=1)
            else:
                activated = self._activate(products.float().add_(self.bias[begin:end]))
                pooled[:, begin:end] = torch.bmm(weights, activated).squeeze(1)
        if self.strategy == "max":
            self._activate(pooled.add_(self.bias))
        return pooled

    def _activate(self, logits: Tensor) -> Tensor:
        """sentence-transformers' SPLADE activation, in place: ``log1p(relu(x))``, once more for log1p_relu."""
        logits.relu_().log1p_()
        if self.activation == "log1p_relu":
            logits.log1p_()
        return logits


def _chunks(lengths: Sequence[int], tokens: int) -> list[slice]:
    """Consecutive sentences in groups of about ``tokens`` tokens, padded (one sentence at least).

    ``lengths`` run longest first, so a group's padded size is its first length times its count.

    Examples:
        >>> _chunks([5, 4, 4, 1], tokens=10)
        [slice(0, 2, None), slice(2, 4, None)]
    """
    groups: list[slice] = []
    first = 0
    for at in range(1, len(lengths) + 1):
        if at == len(lengths) or (at - first + 1) * lengths[first] > tokens:
            groups.append(slice(first, at))
            first = at
    return groups
