"""Sequence packing: several sentences share one row of a forward pass, with no padding between them.

A small merged batch (what a server sees at concurrency 16) wastes much of a padded pass: sentences of
7 and 40 tokens padded to 40. Packed, they sit side by side in one row: position ids restart at each
sentence and a block-diagonal attention mask keeps every sentence to itself, so each sentence's token
vectors are the ones it gets alone, and pooling each segment gives the vector ``encode()`` gives.

Only BERT with absolute position embeddings is packed (:func:`packable`): its positions are what the
caller passes, and its attention takes a 4D additive mask as it is. Rows are capped near
:data:`ROW_TOKENS`: attention costs grow with the square of a row, and a pass of a few rows of that
length ran fastest (``benchmarks/packed_groups.py``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from sbert.modules import Pooling

# Sentences of all-MiniLM-L6-v2 in groups of 32 packed into rows of about 225 tokens ran at 0.91× of
# one encode() of 1,024, rows of about 450 at 0.85× (benchmarks/packed_groups.py, 2026-11-24, Intel Xeon).
ROW_TOKENS = 256
# Tokens of one pass (rows × longest row) unless the caller caps them: 32 full rows, as many tokens as
# a padded batch of 32 sentences of 256 tokens, so that packing a whole corpus never builds a pass
# of millions of tokens.
MAX_PASS_TOKENS = 8192

PACKED_INPUTS = ("input_ids", "position_ids", "segment_ids", "token_index", "token_mask")


def packable(model: nn.Module, precision: str) -> bool:
    """Whether ``model`` (a Hugging Face model) gives the same vectors packed as alone at ``precision``.

    float32 and bf16 only: int8 ranges were calibrated on padded batches, not packed rows.
    """
    config = getattr(model, "config", None)
    return (
        precision in ("float32", "bfloat16")
        and getattr(config, "model_type", "") == "bert"
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
    )


def block_diagonal_mask(segment_ids: Tensor) -> Tensor:
    """The additive attention mask (rows, 1, T, T) of packed rows: 0 where two tokens share a
    segment, the most negative float32 elsewhere, so that each sentence attends only to itself."""
    same = segment_ids[:, :, None] == segment_ids[:, None, :]  # (rows, T, T)
    return torch.where(same, 0.0, torch.finfo(torch.float32).min)[:, None]


def packed_token_vectors(
    body: nn.Module, input_ids: Tensor, position_ids: Tensor, segment_ids: Tensor
) -> Tensor:
    """A Hugging Face encoder's token vectors (rows, T, hidden) of packed rows: each sentence of a
    row attends only to itself (a block-diagonal mask by ``segment_ids``), at its own positions."""
    return body(
        input_ids=input_ids,
        attention_mask=block_diagonal_mask(segment_ids),
        position_ids=position_ids,
        token_type_ids=torch.zeros_like(input_ids),
    ).last_hidden_state


class PackedTransformer(nn.Module):
    """Packed rows → pooled sentence vectors, the graph OpenVINO compiles for :meth:`embed_packed`.

    Inputs (:func:`pass_feeds`): ``input_ids``, ``position_ids`` and ``segment_ids``, each
    ``(rows, T)``, and ``token_index`` and ``token_mask``, each ``(sentences, longest)``: where each
    sentence's tokens lie in the flattened rows, and which of those entries are real. Segment ids
    number the sentences of a row from 1; a token attends only to its own segment (the padding at
    the end of a short row is segment 0 and attends only to itself). Each sentence's tokens are
    gathered into a padded block and pooled by the encoder's own pooling, inside the graph.

    Where the head reads each sentence's first token alone (``reads_first_token``: a
    cross-encoder's classifier) and the model offers ``packed_first_token_vectors(input_ids,
    position_ids, segment_ids, token_index)``, its last layer's vectors of those tokens (sentences,
    1, hidden), that layer runs for them alone and the head gets one token a sentence.
    """

    def __init__(self, model: nn.Module, pooling: Pooling | nn.Module) -> None:
        super().__init__()
        self.model = model
        self.pooling = pooling

    def extra_repr(self) -> str:
        """Part of a graph cache key (the module's repr): the first-token graph is another graph."""
        if self._first_tokens() is not None:
            return "output: each sentence's first token, the last layer computed for it alone"
        return ""

    def _first_tokens(self) -> Any:
        """The model's ``packed_first_token_vectors`` where the head reads the first token alone, else None."""
        if not getattr(self.pooling, "reads_first_token", False):
            return None
        return getattr(self.model, "packed_first_token_vectors", None)

    def forward(
        self,
        input_ids: Tensor,
        position_ids: Tensor,
        segment_ids: Tensor,
        token_index: Tensor,
        token_mask: Tensor,
    ) -> Tensor:
        first_tokens = self._first_tokens()
        if first_tokens is not None:
            first = first_tokens(input_ids, position_ids, segment_ids, token_index)  # (sentences, 1, hidden)
            return self.pooling(first, token_mask[:, :1])
        tokens = packed_token_vectors(self.model, input_ids, position_ids, segment_ids)  # (rows, T, hidden)
        flat = tokens.reshape(-1, tokens.shape[-1])  # (rows · T, hidden)
        gathered = flat[token_index.reshape(-1)].reshape(
            *token_index.shape, -1
        )  # (sentences, longest, hidden)
        return self.pooling(gathered, token_mask)  # (sentences, hidden)


def packed_passes(
    lengths: Sequence[int],
    streams: int,
    row_tokens: int = ROW_TOKENS,
    max_pass_tokens: int = MAX_PASS_TOKENS,
) -> list[list[list[int]]]:
    """Sentence indices packed into rows, rows grouped into forward passes.

    There are enough rows to keep each near ``row_tokens`` and at least one per stream (a multiple of
    ``streams``, so that parallel passes are equal); sentences go longest first to the row holding
    fewest tokens, which balances the rows. Rows are then grouped ``rows / streams`` to a pass, fewer
    when a pass would exceed ``max_pass_tokens`` (rows × longest row).

    Returns:
        ``passes[p][r]``: the sentences of row ``r`` of pass ``p``, in row order. Every index
        appears exactly once.

    Examples:
        >>> packed_passes([10, 3, 6, 4], streams=2)
        [[[0, 1]], [[2, 3]]]
    """
    n = len(lengths)
    if n == 0:
        return []
    lengths = [max(1, int(length)) for length in lengths]
    rows = max(streams, math.ceil(sum(lengths) / row_tokens))
    rows = min(n, math.ceil(rows / streams) * streams)
    heap = [(0, row) for row in range(rows)]  # (tokens so far, row)
    members: list[list[int]] = [[] for _ in range(rows)]
    for i in sorted(range(n), key=lambda i: -lengths[i]):
        tokens, row = heapq.heappop(heap)
        members[row].append(i)
        heapq.heappush(heap, (tokens + lengths[i], row))
    members.sort(key=lambda row: -sum(lengths[i] for i in row))
    per_pass = math.ceil(rows / streams)
    longest = sum(lengths[i] for i in members[0])
    per_pass = max(1, min(per_pass, max_pass_tokens // longest))
    return [members[start : start + per_pass] for start in range(0, rows, per_pass)]


def pass_feeds(ids: Sequence[Sequence[int]], rows: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
    """The :class:`PackedTransformer` inputs of one pass (int64); its output follows the rows' order."""
    width = max(sum(len(ids[i]) for i in row) for row in rows)
    feeds = {name: np.zeros((len(rows), width), np.int64) for name in PACKED_INPUTS[:3]}
    starts, counts = [], []
    for r, row in enumerate(rows):
        at = 0
        for segment, i in enumerate(row, start=1):
            n = len(ids[i])
            feeds["input_ids"][r, at : at + n] = ids[i]
            feeds["position_ids"][r, at : at + n] = np.arange(n)
            feeds["segment_ids"][r, at : at + n] = segment
            starts.append(r * width + at)
            counts.append(n)
            at += n
    count = np.array(counts)
    offsets = np.arange(count.max())  # (longest,)
    mask = offsets < count[:, None]  # (sentences, longest)
    feeds["token_index"] = np.where(mask, np.array(starts)[:, None] + offsets, 0)
    feeds["token_mask"] = mask.astype(np.int64)
    return feeds
