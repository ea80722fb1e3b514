"""SpladePooling: token logits → one weight per vocabulary word (SPLADE).

Each token's logits go through ``log(1 + relu(x))`` (``log1p_relu``: a second ``log1p``, as
OpenSearch's models), padding zeroed, then the max (SPLADE v2 and later) or the sum (the first
SPLADE) over the tokens: most words get weight 0, so the vector is sparse. The arithmetic is
sentence-transformers 6.2's, operation for operation, so the weights are bit-equal on one device.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.modules.module import Module

SPLADE_POOLING_STRATEGIES = ("max", "sum")
SPLADE_ACTIVATIONS = ("relu", "log1p_relu")


class SpladePooling(Module):
    """Pool (batch, seq, vocab) MLM logits into (batch, vocab) sparse weights.

    Args:
        pooling_strategy: ``"max"`` or ``"sum"`` over the tokens.
        activation_function: ``"relu"`` (``log1p(relu(x))``) or ``"log1p_relu"`` (``log1p`` twice).
        embedding_dimension: The vocabulary size (written to the config; ``None``: set by the
            first batch, as sentence-transformers does).
        chunk_size: Pool this many tokens at a time (less memory on long inputs); ``None``: all.
            Not saved, as in sentence-transformers.

    Raises:
        ValueError: an unknown strategy or activation, or a ``chunk_size`` below 1.

    Examples:
        >>> import torch
        >>> pooling = SpladePooling("max")
        >>> logits = torch.tensor([[[1.0, -2.0], [0.0, 3.0]]])     # (batch 1, seq 2, vocab 2)
        >>> pooling(logits, torch.tensor([[1, 1]])).round(decimals=4)
        tensor([[0.6931, 1.3863]])
        >>> pooling.mode
        'splade_max'
    """

    st_type = "sentence_transformers.sparse_encoder.modules.splade_pooling.SpladePooling"
    config_keys = ("pooling_strategy", "activation_function", "embedding_dimension")
    include_prompt: ClassVar[bool] = True  # every token counts, the prompt's included (as ST)

    def __init__(
        self,
        pooling_strategy: str = "max",
        activation_function: str = "relu",
        embedding_dimension: int | None = None,
        chunk_size: int | None = None,
    ) -> None:
        super().__init__()
        if pooling_strategy not in SPLADE_POOLING_STRATEGIES:
            raise ValueError(
                f"pooling_strategy {pooling_strategy!r} is not one of {', '.join(SPLADE_POOLING_STRATEGIES)}"
            )
        if activation_function not in SPLADE_ACTIVATIONS:
            raise ValueError(
                f"activation_function {activation_function!r} is not one of {', '.join(SPLADE_ACTIVATIONS)}"
            )
        if chunk_size is not None and (
            isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1
        ):
            raise ValueError(f"chunk_size must be a whole number of at least 1 or None, got {chunk_size!r}")
        self.pooling_strategy = pooling_strategy
        self.activation_function = activation_function
        self.embedding_dimension = embedding_dimension
        self.chunk_size = chunk_size

    @property
    def mode(self) -> str:
        """The pooling's name in model identities: ``splade_max`` or ``splade_sum``."""
        return f"splade_{self.pooling_strategy}"

    @classmethod
    def load(cls, folder: Any, **options: Any) -> SpladePooling:
        """Read ``config.json`` (``word_embedding_dimension``: sentence-transformers' older name)."""
        file = folder / cls.config_file_name
        config = dict(read_json(file))
        if "word_embedding_dimension" in config:
            config.setdefault("embedding_dimension", config.pop("word_embedding_dimension"))
        try:
            return cls(**{key: config[key] for key in cls.config_keys if key in config})
        except ValueError as error:
            raise ModelLoadError(f"{file}: {error}") from error

    def activate(self, logits: Tensor) -> Tensor:
        """``log1p(relu(x))`` (twice ``log1p`` for ``log1p_relu``) of masked logits, in place where
        no gradient is needed (sentence-transformers' order of operations)."""
        weights = logits.relu_() if not logits.requires_grad else logits.relu()
        weights = weights.log1p_() if not weights.requires_grad else weights.log1p()
        if self.activation_function == "log1p_relu":
            weights = weights.log1p_() if not weights.requires_grad else weights.log1p()
        return weights

    def forward(self, token_logits: Tensor, attention_mask: Tensor) -> Tensor:
        """Weights (batch, vocab) of logits (batch, seq, vocab) under ``attention_mask`` (batch, seq)."""
        batch, seq, vocab = token_logits.shape
        mask = attention_mask.unsqueeze(-1).to(token_logits.dtype)  # (batch, seq, 1)
        if self.pooling_strategy == "max":
            pooled = torch.full(
                (batch, vocab), float("-inf"), dtype=token_logits.dtype, device=token_logits.device
            )
        else:
            pooled = torch.zeros((batch, vocab), dtype=token_logits.dtype, device=token_logits.device)
        step = self.chunk_size or max(seq, 1)
        for start in range(0, seq, step):
            weights = self.activate(token_logits[:, start : start + step] * mask[:, start : start + step])
            if self.pooling_strategy == "max":
                pooled = torch.maximum(pooled, weights.max(dim=1).values)
            else:
                pooled = pooled + weights.sum(dim=1)
        if self.embedding_dimension is None:
            self.embedding_dimension = vocab
        return pooled  # (batch, vocab)

    def extra_repr(self) -> str:
        return f"pooling_strategy={self.pooling_strategy!r}, activation_function={self.activation_function!r}"
