"""BERT's forward pass on a batch's real tokens only, differentiable, on the HF model's own parameters.

The layout is :mod:`sbert.inference.cuda.unpadded`'s: every sentence's tokens end to end in one flat row
``(total, hidden)``, so the projections, the feed-forward layers and the LayerNorms (nearly all of a
step's work, forward and backward) never touch padding. Attention, the one step that needs each
sentence's tokens together, runs

- through PyTorch's variable-length attention (``torch.nn.attention.varlen.varlen_attn``: flash
  kernels, CUDA, fp16/bf16) when the run asks for it. Its backward pass is registered in PyTorch
  2.11 (the GPU image's) as in 2.13 (``_varlen_attn.register_autograd``, flash attention's
  backward). It has no dropout, so it is used only where attention dropout is off (the model's
  ``attention_probs_dropout_prob`` is 0, or the module is in eval mode);
- else through a padded block per batch ``(batch, heads, longest, head_dim)`` for
  ``scaled_dot_product_attention`` with a key mask and BERT's attention dropout (the CPU's path too).

A padded block is built by scattering the real tokens into zeros (:func:`to_blocks`), not by
gathering ``flat[token_index]``: that gather's padding entries all read token 0, and its backward
(``index_put_`` with ``accumulate=True``) adds them up on CUDA with one warp walking every duplicate
in turn (pytorch/pytorch#41162): some 3,100 padding slots a block at batch 256 of SNLI pairs, 19
blocks a step (q, k, v of 6 layers and the pooling's), which made the step's device time grow with
the batch. The scatter's backward is a plain gather (``index_select``) and the values are the same:
padding is masked out of attention and pooling either way.

Dropout after the embeddings, the attention output and the feed-forward output is BERT's, in its
places; its random draws differ from the padded model's (other shapes), so losses agree in
distribution, and exactly with dropout off.

Under autocast the matrix products run in the low dtype and every LayerNorm in float32 on a float32
residual sum (the linear's low-precision output is promoted by the add), as CUDA's autocast runs
the padded model: no op mixes floating dtypes where CUDA refuses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.nn.functional as F
from torch import Tensor

from sbert.inference.cuda.unpadded import UnpaddedBatch

Attention = Callable[..., Tensor]


def varlen_attention() -> Attention | None:
    """PyTorch's variable-length attention, or ``None`` before PyTorch 2.9."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None
    return varlen_attn  # type: ignore[return-value]  # a Tensor without return_aux


def unpadded_token_vectors(model: Any, batch: UnpaddedBatch, varlen: Attention | None = None) -> Tensor:
    """Token vectors of the last layer, ``(total, hidden)`` in the batch's flat order.

    Args:
        model: A Hugging Face ``BertModel`` (what :func:`~sbert.inference.fast_bert.supports` accepts).
        batch: The flat batch, on the model's device.
        varlen: ``varlen_attn`` to use where attention dropout is off; ``None``: padded blocks.
    """
    config, training = model.config, model.training
    hidden_dropout = float(config.hidden_dropout_prob) if training else 0.0
    attention_dropout = float(config.attention_probs_dropout_prob) if training else 0.0
    if attention_dropout > 0:
        varlen = None  # varlen_attn has no dropout: BERT's attention dropout needs the blocks
    heads = int(config.num_attention_heads)
    embeddings = model.embeddings
    x = (
        embeddings.word_embeddings(batch.input_ids)
        + embeddings.position_embeddings(batch.position_ids)
        + embeddings.token_type_embeddings.weight[0]  # every token is of type 0, as in training
    )  # (total, hidden)
    x = F.dropout(embeddings.LayerNorm(x), hidden_dropout, training)
    for layer in model.encoder.layer:
        attention = layer.attention
        query, key, value = (
            projection(x).unflatten(-1, (heads, -1))  # (total, heads, head_dim)
            for projection in (attention.self.query, attention.self.key, attention.self.value)
        )
        if varlen is not None:
            context = varlen(
                query, key, value, batch.cu_seqlens, batch.cu_seqlens, batch.longest, batch.longest
            )
            context = context.flatten(1)  # (total, hidden)
        else:
            context = block_attention(query, key, value, batch, attention_dropout)
        out = F.dropout(attention.output.dense(context), hidden_dropout, training)
        x = attention.output.LayerNorm(out + x)  # the add promotes a low-precision output: float32
        up = F.gelu(layer.intermediate.dense(x))  # (total, intermediate)
        out = F.dropout(layer.output.dense(up), hidden_dropout, training)
        x = layer.output.LayerNorm(out + x)
    return x  # (total, hidden)


def to_blocks(flat: Tensor, batch: UnpaddedBatch) -> Tensor:
    """Flat token rows ``(total, *rest)`` as a zero-padded block ``(batch, longest, *rest)``.

    Examples:
        >>> import torch
        >>> from sbert.inference.cuda.unpadded import unpadded_batch
        >>> batch = unpadded_batch([[101, 7, 102], [101, 102]])
        >>> to_blocks(torch.tensor([1.0, 2, 3, 4, 5]), batch).tolist()
        [[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]
    """
    sentences, longest = batch.token_index.shape
    zeros = flat.new_zeros((sentences * longest, *flat.shape[1:]))
    # index_copy's backward for ``flat`` is a gather: no accumulation over duplicate indices.
    return zeros.index_copy(0, batch.flat_index, flat).unflatten(0, (sentences, longest))


def block_attention(
    query: Tensor, key: Tensor, value: Tensor, batch: UnpaddedBatch, dropout: float
) -> Tensor:
    """Attention per sentence through a padded block: ``(total, heads, head_dim)`` each → ``(total, hidden)``."""
    sentences, longest = batch.token_index.shape

    def block(flat: Tensor) -> Tensor:  # (total, heads, d) → (batch, heads, longest, d)
        return to_blocks(flat, batch).transpose(1, 2)

    keep = batch.token_mask[:, None, None, :]  # (batch, 1, 1, longest): padding is never attended
    context = F.scaled_dot_product_attention(
        block(query), block(key), block(value), attn_mask=keep, dropout_p=dropout
    )  # (batch, heads, longest, d)
    return context.transpose(1, 2).reshape(sentences * longest, -1)[batch.flat_index]  # (total, hidden)
