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

On a GPU (:meth:`FusedSpladeHead.pool_tokens`) the same blocks reduce a batch's flat real tokens by
their sentence index (``scatter_reduce``), with no host synchronisation: what the CUDA pipeline's
unpadded batches give. :class:`SpladeHead` puts the fused head in a pooling's place, so that the
runners of :mod:`sbert.inference` (PyTorch, OpenVINO, the CUDA pipeline) run a SPLADE model's body
as they run a dense one's and finish with this head.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from sbert.base.weights import weights_version

POOLING_STRATEGIES = ("max", "sum")
ACTIVATIONS = ("relu", "log1p_relu")
# A block of the vocabulary and a chunk of tokens small enough that one block of logits
# (chunk × block, 2 MB in float32) stays in cache while it is reduced (benchmarks/sparse_speed.py
# --tune on the measured CPU: blocks of 2,048 ran 10× faster than the unblocked product plus passes).
VOCAB_BLOCK = 2048
CHUNK_TOKENS = 256
# A GPU's block: fewer, larger products (16,384 tokens × 8,192 words in fp16 is 256 MB of logits).
DEVICE_VOCAB_BLOCK = 8192
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


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
        dtype: The decoder's dtype: ``torch.float32`` or ``torch.bfloat16`` (``torch.float16``:
            :meth:`pool_tokens` only, a GPU's).

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
        if dtype not in DTYPES.values():
            raise ValueError(f"the fused head computes in float32, bfloat16 or float16, not {dtype}")
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

    def pool_tokens(self, hidden: Tensor, sentence: Tensor, count: int) -> Tensor:
        """Sentence vectors ``(count, vocab)``, float32, on ``hidden``'s device, of flat token vectors
        ``hidden`` ``(tokens, hidden)`` in any order, ``sentence`` ``(tokens,)`` naming each one's
        sentence (an index ``>= count`` drops the token: padding). No host synchronisation: the
        reduction is ``scatter_reduce`` / ``index_add`` by sentence, one vocabulary block at a time."""
        device = hidden.device
        out = torch.empty((count, self.vocab_size), dtype=torch.float32, device=device)
        rows = count + 1  # the last collects the dropped tokens
        sentence = sentence.clamp(max=count)  # (tokens,)
        with torch.inference_mode():
            tokens = self.transform(hidden.float()).to(self.dtype)  # (tokens, hidden)
            for begin in range(0, self.vocab_size, DEVICE_VOCAB_BLOCK):
                end = min(begin + DEVICE_VOCAB_BLOCK, self.vocab_size)
                products = torch.mm(tokens, self.weight[:, begin:end])  # (tokens, block)
                index = sentence[:, None].expand_as(products)  # a view: no copy
                if self.strategy == "max":
                    block = torch.full((rows, end - begin), float("-inf"), dtype=self.dtype, device=device)
                    block.scatter_reduce_(0, index, products, "amax")
                    out[:, begin:end] = block[:count]  # raw max: bias and activation below, once
                else:
                    activated = self._activate(products.float().add_(self.bias[begin:end]))
                    block = torch.zeros((rows, end - begin), dtype=torch.float32, device=device)
                    out[:, begin:end] = block.index_add_(0, sentence, activated)[:count]
            if self.strategy == "max":
                self._activate(out.add_(self.bias))
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


class SpladeHead(nn.Module):
    """The fused MLM head and SPLADE pooling in a pooling's place: ``(token vectors, mask) →
    (batch, vocab)``, what the runners of :mod:`sbert.inference` call after a body
    (:class:`~sbert.sparse.engine.SparseBody`). The runners see :attr:`pools_real_tokens` and hand
    it real tokens where they have them (:meth:`pool_tokens`: the CUDA pipeline's unpadded batches),
    keep it out of OpenVINO's graphs (it runs on the host, on the graph's token vectors), and ask
    :meth:`at_precision` for the head of their plan's precision.

    Args:
        mlm: The ``*ForMaskedLM`` model (:func:`fusable`); its head's weights are read, converted,
            whenever they change (read on the host: :func:`~sbert.base.weights.weights_version`).
        pooling_strategy, activation: As :class:`FusedSpladeHead`'s.
        precision: The decoder's precision: ``"float32"``, ``"bfloat16"`` or ``"float16"``.

    Examples:
        >>> from transformers import BertConfig, BertForMaskedLM
        >>> _ = torch.manual_seed(0)
        >>> config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
        ...                     num_attention_heads=2, intermediate_size=16)
        >>> head = SpladeHead(BertForMaskedLM(config).eval(), "max", "relu")
        >>> tokens, mask = torch.randn(2, 3, 8), torch.tensor([[1, 1, 0], [1, 1, 1]])
        >>> padded = head(tokens, mask)
        >>> flat = head.pool_tokens(tokens[mask.bool()], torch.tensor([0, 0, 1, 1, 1]), 2)
        >>> padded.shape, bool(torch.allclose(padded, flat, atol=1e-6))
        (torch.Size([2, 50]), True)
    """

    pools_real_tokens = True  # the runners' sign: real tokens in, no graph of it
    include_prompt = True  # the plans ask a pooling this

    def __init__(self, mlm: Any, pooling_strategy: str, activation: str, precision: str = "float32") -> None:
        super().__init__()
        if not fusable(mlm):
            raise ValueError(f"{type(mlm).__name__} has no BERT-style MLM head to fuse")
        self._mlm = (mlm,)  # not a submodule: the model's own weights, saved and moved by the model
        self.pooling_strategy, self.activation, self.precision = pooling_strategy, activation, precision
        self.dtype = DTYPES[precision]
        self.output_dim = int(mlm.cls.predictions.decoder.out_features)
        self._fused: tuple[tuple[object, ...], FusedSpladeHead] | None = None
        self._heads: dict[str, SpladeHead] = {precision: self}

    def __getstate__(self) -> dict[str, object]:
        """Copied without its converted weights (built again on first use)."""
        return self.__dict__ | {"_fused": None}

    def at_precision(self, precision: str) -> SpladeHead:
        """The head whose decoder computes at ``precision`` (made once)."""
        head = self._heads.get(precision)
        if head is None:
            head = SpladeHead(self._mlm[0], self.pooling_strategy, self.activation, precision)
            head._heads = self._heads
            self._heads[precision] = head
        return head

    @property
    def fused(self) -> FusedSpladeHead:
        """The converted head, built again when the model's weights have changed or moved."""
        mlm = self._mlm[0]
        key = weights_version(mlm)
        if self._fused is None or self._fused[0] != key:
            self._fused = (key, FusedSpladeHead(mlm, self.pooling_strategy, self.activation, self.dtype))
        return self._fused[1]

    def forward(self, token_embeddings: Tensor, attention_mask: Tensor, prompt_length: int = 0) -> Tensor:
        """Vectors ``(batch, vocab)``, float32, of a padded batch ``(batch, seq, hidden)``."""
        if token_embeddings.device.type == "cpu" and self.dtype != torch.float16:
            real = attention_mask.bool()  # (batch, seq)
            return self.fused(token_embeddings[real], real.sum(1).tolist())
        batch, seq = attention_mask.shape  # a device: padding goes to a dropped row, no host sync
        rows = torch.arange(batch, device=attention_mask.device)[:, None].expand(batch, seq)
        sentence = torch.where(attention_mask.bool(), rows, batch).reshape(-1)  # (batch · seq,)
        return self.pool_tokens(token_embeddings.reshape(batch * seq, -1), sentence, batch)

    def pool_tokens(self, hidden: Tensor, sentence: Tensor, count: int) -> Tensor:
        """:meth:`FusedSpladeHead.pool_tokens`: flat token vectors and their sentences → ``(count, vocab)``."""
        return self.fused.pool_tokens(hidden, sentence, count)
