"""Unpadded BERT: a batch's real tokens in one flat row, so no matrix product is spent on padding.

A padded batch of sentences of 9 to 40 tokens multiplies every projection and feed-forward matrix by
``batch × 40`` token vectors, real or not. Here the embeddings, projections, feed-forward layers and
LayerNorms run on the ``total`` real tokens only, ``(total, hidden)``; attention, the one step that
needs each sentence's tokens together, runs per sentence: through PyTorch's variable-length attention
(``torch.nn.attention.varlen``) on a CUDA GPU in fp16 or bf16, else by gathering the query, key and
value vectors into a padded block for ``scaled_dot_product_attention`` with a key mask and scattering
the result back. For a model like all-MiniLM-L6-v2 attention is a few percent of the work at typical
lengths, so the padded block costs little; the rest is what :mod:`sbert.inference.packing` does for
OpenVINO, without the block-diagonal mask.

Only what :func:`~sbert.inference.fast_bert.supports` accepts runs unpadded (BERT with absolute
positions and exact GELU); other models keep the padded path.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from transformers import PreTrainedModel

from sbert.inference.fast_bert import FastBert
from sbert.inference.precision import warn_once


@dataclass
class UnpaddedBatch:
    """One batch in flat form (what :func:`unpadded_batch` builds on the host).

    Attributes:
        input_ids: ``(total,)`` the batch's tokens, sentence after sentence.
        position_ids: ``(total,)`` each token's position in its sentence.
        cu_seqlens: ``(batch + 1,)`` int32, where each sentence starts in the flat row.
        token_index: ``(batch, longest)`` where each sentence's tokens lie in the flat row (0 past
            its end): gathers a padded block.
        token_mask: ``(batch, longest)`` which entries of ``token_index`` are real.
        flat_index: ``(total,)`` where each real token lies in the flattened padded block:
            scatters a padded block back (a gather, so no host sync as boolean indexing would cost).
        longest: The longest sentence's tokens (a host int: shapes never wait on the device).
    """

    input_ids: Tensor
    position_ids: Tensor
    cu_seqlens: Tensor
    token_index: Tensor
    token_mask: Tensor
    flat_index: Tensor
    longest: int

    def to(self, device: torch.device) -> UnpaddedBatch:
        """The batch on ``device``."""
        return self.map(lambda tensor: tensor.to(device))

    def map(self, convert: Callable[[Tensor], Tensor]) -> UnpaddedBatch:
        """The batch with every tensor through ``convert`` (pinned, copied to a device...)."""
        tensors = {field.name: convert(getattr(self, field.name)) for field in fields(self)[:-1]}
        return UnpaddedBatch(**tensors, longest=self.longest)


def unpadded_batch(ids: Sequence[Sequence[int]]) -> UnpaddedBatch:
    """The flat form of tokenized sentences, in their order.

    Examples:
        >>> batch = unpadded_batch([[101, 7, 102], [101, 102]])
        >>> batch.input_ids.tolist(), batch.position_ids.tolist(), batch.cu_seqlens.tolist()
        ([101, 7, 102, 101, 102], [0, 1, 2, 0, 1], [0, 3, 5])
        >>> batch.token_index.tolist(), batch.flat_index.tolist()
        ([[0, 1, 2], [3, 4, 0]], [0, 1, 2, 3, 4])
    """
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    if (lengths < 1).any():
        raise ValueError(f"sentence {int(np.argmin(lengths))} has no tokens; every sentence needs one")
    total, longest = int(lengths.sum()), int(lengths.max())
    starts = np.concatenate([[0], np.cumsum(lengths)])  # (batch + 1,)
    offsets = np.arange(longest)  # (longest,)
    mask = offsets < lengths[:, None]  # (batch, longest)
    token_index = np.where(mask, starts[:-1, None] + offsets, 0)
    positions = np.arange(total) - np.repeat(starts[:-1], lengths)  # (total,)
    flat_index = np.flatnonzero(mask)  # row-major: sentence after sentence, as the flat row
    return UnpaddedBatch(
        input_ids=torch.from_numpy(np.fromiter(itertools.chain.from_iterable(ids), np.int64, total)),
        position_ids=torch.from_numpy(positions),
        cu_seqlens=torch.from_numpy(starts.astype(np.int32)),
        token_index=torch.from_numpy(token_index),
        token_mask=torch.from_numpy(mask),
        flat_index=torch.from_numpy(flat_index),
        longest=longest,
    )


class UnpaddedBert:
    """Token vectors of a BERT model on a batch's real tokens only.

    Args:
        model: A Hugging Face ``BertModel`` (see :func:`~sbert.inference.fast_bert.supports`).
        dtype: The dtype of the matrix products: ``torch.float32`` (the padded model's vectors to
            1e-5), ``torch.float16`` or ``torch.bfloat16`` (weights converted once).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> encoder = SentenceEncoder.from_pretrained(device="cpu")
        >>> bert = UnpaddedBert(encoder.transformer.model, torch.float32)
        >>> batch = unpadded_batch(encoder.token_ids(["A man plays a guitar.", "Rain."]).ids)
        >>> bert(batch).shape  # (total, hidden): 8 + 4 real tokens
        torch.Size([12, 384])
    """

    def __init__(self, model: PreTrainedModel, dtype: torch.dtype) -> None:
        self.weights = FastBert(model, dtype)  # the same converted, fused weights as the CPU's bf16 path
        on_cuda = next(model.parameters()).device.type == "cuda"
        low = dtype in (torch.float16, torch.bfloat16)
        # PyTorch's variable-length attention (flash kernels: CUDA, fp16/bf16); None: padded blocks.
        self.varlen = _varlen_attention() if on_cuda and low else None
        self.varlen_works = False  # set once it has run: a later failure is an error, not a fallback

    @property
    def dtype(self) -> torch.dtype:
        return self.weights.dtype

    def __call__(self, batch: UnpaddedBatch, first_token: bool = False) -> Tensor:
        """Token vectors of the last layer, float32, ``(total, hidden)`` in the batch's flat order;
        with ``first_token``, each sentence's first token's alone, ``(batch, 1, hidden)``: the last
        layer runs on a padded block for that token's query alone
        (:meth:`~sbert.inference.fast_bert.FastBert.first_token_layer`)."""
        w = self.weights
        hidden = w.word.shape[1]
        x = F.embedding(batch.input_ids, w.word) + F.embedding(batch.position_ids, w.position) + w.token_type
        x = F.layer_norm(x, (hidden,), *w.norm0, w.eps).to(w.dtype)  # (total, hidden)
        for layer in w.layers[:-1] if first_token else w.layers:
            qkv = F.linear(x, layer.qkv_weight, layer.qkv_bias)  # (total, 3 * hidden)
            x = w.finish(layer, x, self._attention(qkv, batch))
        if first_token:  # the last layer on each sentence's padded block, for its first token alone
            keep = batch.token_mask[:, None, None, :]  # (batch, 1, 1, longest)
            blocks = x[batch.token_index]  # (batch, longest, hidden)
            return w.first_token_layer(blocks, keep).float()  # (batch, 1, hidden)
        return x.float()

    def _attention(self, qkv: Tensor, batch: UnpaddedBatch) -> Tensor:
        """Each sentence's tokens attending to each other: ``(total, 3 * hidden)`` → ``(total, hidden)``."""
        if self.varlen is not None:
            return self._varlen_or_blocks(qkv, batch)
        return self._blocks(qkv, batch)

    def _varlen_or_blocks(self, qkv: Tensor, batch: UnpaddedBatch) -> Tensor:
        """Variable-length attention; where its first call fails, padded blocks, and only if they
        run: an error both raise (a bad input, a dtype CUDA refuses, out of memory) is raised, not
        hidden by a switch to the slower path; nor does a failure after it has run once switch it."""
        assert self.varlen is not None
        total, heads, hidden = qkv.shape[0], self.weights.heads, qkv.shape[1] // 3
        query, key, value = qkv.view(total, 3, heads, -1).unbind(1)  # (total, heads, head_dim) each
        try:
            cu, longest = batch.cu_seqlens, batch.longest
            context = self.varlen(query, key, value, cu, cu, longest, longest).reshape(total, hidden)
        except torch.OutOfMemoryError:
            raise
        except Exception as error:
            if self.varlen_works:
                raise
            context = self._blocks(qkv, batch)  # raises what the blocks raise too
            warn_once(
                f"variable-length attention cannot run here ({type(error).__name__}: {error}); "
                "this model's GPU pipeline runs padded attention blocks instead (slower)"
            )
            self.varlen = None
            return context
        self.varlen_works = True
        return context

    def _blocks(self, qkv: Tensor, batch: UnpaddedBatch) -> Tensor:
        """Attention per sentence through a padded block ``(batch, heads, longest, head_dim)``."""
        heads, hidden = self.weights.heads, qkv.shape[1] // 3
        sentences, longest = batch.token_index.shape
        block = qkv[batch.token_index]  # (batch, longest, 3 * hidden)
        query, key, value = block.view(sentences, longest, 3, heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        keep = batch.token_mask[:, None, None, :]  # (batch, 1, 1, longest): padding is never attended
        context = F.scaled_dot_product_attention(query, key, value, attn_mask=keep)  # (b, heads, seq, d)
        return context.transpose(1, 2).reshape(sentences * longest, hidden)[batch.flat_index]


def padded_tokens(tokens: Tensor, batch: UnpaddedBatch) -> Tensor:
    """Flat token vectors ``(total, hidden)`` as a padded block ``(batch, longest, hidden)`` for pooling
    (entries past a sentence's end hold the batch's first token; ``batch.token_mask`` masks them)."""
    return tokens[batch.token_index]


def _varlen_attention() -> Callable[..., Tensor] | None:
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:  # PyTorch before 2.9
        return None
    return varlen_attn  # type: ignore[return-value]  # a Tensor without return_aux
