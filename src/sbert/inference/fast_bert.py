"""FastBert: an inference-only BERT forward pass with its weights stored in bf16.

Hugging Face's ``BertModel`` under ``torch.autocast`` converts every weight to bf16 on every call and
runs many small Python steps per layer. FastBert converts the weights once, fuses the query, key and
value projections into one matrix product, and runs each layer in a handful of tensor operations.

Every weight a layer uses is stored in the activations' dtype, LayerNorm's too: CUDA's layer-norm
kernel refuses float32 weights on fp16/bf16 activations ("expected scalar type Half but found
Float", issue 43), where the CPU's accepts them. Its statistics are still accumulated in float32
(both devices' kernels do so for fp16 and bf16), so only the weights' rounding is added: 2^-11
relative in fp16, as for every matrix weight (on an H200: STSb unchanged, worst cosine distance to
float32 1.9e-6). The embeddings' LayerNorm runs in float32 on the float32 embedding sum, then casts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from transformers import PreTrainedModel


@dataclass
class _Layer:
    qkv_weight: Tensor  # (3 * hidden, hidden): query, key and value projections stacked
    qkv_bias: Tensor
    out_weight: Tensor  # (hidden, hidden)
    out_bias: Tensor
    norm1: tuple[Tensor, Tensor]  # LayerNorm weight and bias, in the activations' dtype
    up_weight: Tensor  # (intermediate, hidden)
    up_bias: Tensor
    down_weight: Tensor  # (hidden, intermediate)
    down_bias: Tensor
    norm2: tuple[Tensor, Tensor]


def supports(model: PreTrainedModel) -> bool:
    """Whether FastBert reproduces this model: BERT with absolute positions and exact GELU."""
    config = model.config
    return (
        getattr(config, "model_type", "") == "bert"
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and getattr(config, "hidden_act", "") == "gelu"
        and hasattr(model, "embeddings")
        and hasattr(model, "encoder")
    )


class FastBert:
    """Token vectors of a BERT model, computed with weights converted once to ``dtype``.

    Args:
        model: A Hugging Face ``BertModel`` (see :func:`supports`).
        dtype: The dtype of the matrix products, normally ``torch.bfloat16``.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> encoder = SentenceEncoder.from_pretrained()
        >>> fast = FastBert(encoder.transformer.model, torch.bfloat16)
        >>> features = encoder.transformer.collate(encoder.token_ids(["A man plays a guitar."]).ids)
        >>> fast(features["input_ids"], features["attention_mask"]).shape
        torch.Size([1, 8, 384])
    """

    def __init__(self, model: PreTrainedModel, dtype: torch.dtype) -> None:
        if not supports(model):
            raise ValueError(f"FastBert supports BERT models with absolute positions, not {model.config}")
        self.dtype = dtype
        self.heads = int(model.config.num_attention_heads)
        self.eps = float(model.config.layer_norm_eps)
        embeddings: Any = model.embeddings
        with torch.no_grad():
            self.word = embeddings.word_embeddings.weight.detach()  # (vocab, hidden), float32
            self.position = embeddings.position_embeddings.weight.detach()
            self.token_type = embeddings.token_type_embeddings.weight.detach()[0]
            self.norm0 = _norm(embeddings.LayerNorm, torch.float32)  # on the float32 embedding sum
            self.layers = [self._convert(layer) for layer in model.encoder.layer]  # type: ignore[union-attr]

    def _convert(self, layer: Any) -> _Layer:  # a BertLayer; Any because HF modules are untyped
        attention = layer.attention
        projections = (attention.self.query, attention.self.key, attention.self.value)
        return _Layer(
            qkv_weight=torch.cat([p.weight for p in projections]).to(self.dtype),
            qkv_bias=torch.cat([p.bias for p in projections]).to(self.dtype),
            out_weight=attention.output.dense.weight.to(self.dtype),
            out_bias=attention.output.dense.bias.to(self.dtype),
            norm1=_norm(attention.output.LayerNorm, self.dtype),
            up_weight=layer.intermediate.dense.weight.to(self.dtype),
            up_bias=layer.intermediate.dense.bias.to(self.dtype),
            down_weight=layer.output.dense.weight.to(self.dtype),
            down_bias=layer.output.dense.bias.to(self.dtype),
            norm2=_norm(layer.output.LayerNorm, self.dtype),
        )

    def __call__(self, input_ids: Tensor, attention_mask: Tensor, first_token: bool = False) -> Tensor:
        """Token vectors of the last layer, float32, (batch, seq, hidden); with ``first_token``, the
        first token's alone, (batch, 1, hidden) (:meth:`first_token_layer`: all a classifier reads)."""
        batch, seq = input_ids.shape
        hidden = self.word.shape[1]
        x = F.embedding(input_ids, self.word) + self.position[:seq] + self.token_type  # (batch, seq, hidden)
        x = F.layer_norm(x, (hidden,), *self.norm0, self.eps).to(self.dtype)
        keep = attention_mask.bool()[:, None, None, :]  # (batch, 1, 1, seq): padding is never attended
        for layer in self.layers[:-1] if first_token else self.layers:
            qkv = F.linear(x, layer.qkv_weight, layer.qkv_bias)  # (batch, seq, 3 * hidden)
            query, key, value = qkv.view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
            context = F.scaled_dot_product_attention(query, key, value, attn_mask=keep)  # (b, heads, seq, d)
            x = self.finish(layer, x, context.transpose(1, 2).reshape(batch, seq, hidden))
        if first_token:
            x = self.first_token_layer(x, keep)
        return x.float()

    def finish(self, layer: _Layer, x: Tensor, context: Tensor) -> Tensor:
        """A layer after its attention: the output projection and the feed-forward, each added to
        its input and normalised; ``x`` and ``context`` (..., hidden) → (..., hidden)."""
        hidden = x.shape[-1]
        x = F.layer_norm(
            x + F.linear(context, layer.out_weight, layer.out_bias), (hidden,), *layer.norm1, self.eps
        )
        up = F.gelu(F.linear(x, layer.up_weight, layer.up_bias))  # (..., intermediate)
        return F.layer_norm(
            x + F.linear(up, layer.down_weight, layer.down_bias), (hidden,), *layer.norm2, self.eps
        )

    def first_token_layer(self, x: Tensor, keep: Tensor) -> Tensor:
        """The last layer on ``x`` (batch, seq, hidden), its output for each row's first token only
        (batch, 1, hidden): keys and values of every token, but the query, the attention output and
        the feed-forward of the first alone, five sixths of a layer's matrix products saved. ``keep``
        (batch, 1, 1, seq) is True on the tokens a row attends to."""
        layer, (batch, seq, hidden) = self.layers[-1], x.shape
        first = x[:, :1]  # (batch, 1, hidden)
        query = F.linear(first, layer.qkv_weight[:hidden], layer.qkv_bias[:hidden])  # (batch, 1, hidden)
        query = query.view(batch, 1, self.heads, -1).transpose(1, 2)  # (batch, heads, 1, d)
        key_value = F.linear(
            x, layer.qkv_weight[hidden:], layer.qkv_bias[hidden:]
        )  # (batch, seq, 2 * hidden)
        key, value = key_value.view(batch, seq, 2, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        context = F.scaled_dot_product_attention(query, key, value, attn_mask=keep)  # (batch, heads, 1, d)
        return self.finish(layer, first, context.transpose(1, 2).reshape(batch, 1, hidden))


def _norm(layer_norm: Any, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    return layer_norm.weight.detach().to(dtype), layer_norm.bias.detach().to(dtype)
