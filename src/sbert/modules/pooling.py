"""Pooling: token vectors → one sentence vector (the paper's CLS, MEAN and MAX strategies)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sbert.options import POOLING_MODES, choice


def check_pooling_mode(mode: str) -> str:
    """Return ``mode`` normalised to lower case, or raise ``ValueError`` listing the choices."""
    return choice(mode, POOLING_MODES, "pooling mode")


class Pooling(nn.Module):
    """Reduce a sentence's token vectors to one fixed-size vector.

    Args:
        dim: Size of each token vector (and of the output).
        mode: ``"mean"`` (default: mean over real tokens), ``"cls"`` (the first token's output) or
            ``"max"`` (max over time; padding can never win).

    Example:
        >>> import torch
        >>> pool = Pooling(dim=2, mode="mean")
        >>> tokens = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]])  # (batch, seq, dim)
        >>> mask = torch.tensor([[1, 1, 0]])                                 # last token is padding
        >>> pool(tokens, mask)
        tensor([[2., 3.]])
    """

    def __init__(self, dim: int, mode: str = "mean") -> None:
        super().__init__()
        self.dim = dim
        self.mode = check_pooling_mode(mode)

    def forward(self, token_embeddings: Tensor, attention_mask: Tensor) -> Tensor:
        # token_embeddings: (batch, seq, dim); attention_mask: (batch, seq), 1 for real tokens
        if self.mode == "cls":
            return token_embeddings[:, 0]
        mask = attention_mask.unsqueeze(-1).to(token_embeddings.dtype)  # (batch, seq, 1)
        if self.mode == "max":
            # The lowest finite value, not -inf: a sentence with no real token then gives a finite vector.
            lowest = torch.finfo(token_embeddings.dtype).min
            return token_embeddings.masked_fill(mask == 0, lowest).max(dim=1).values
        summed = (token_embeddings * mask).sum(dim=1)  # (batch, dim)
        counts = mask.sum(dim=1).clamp(min=1e-9)  # (batch, 1)
        return summed / counts

    def config(self) -> dict[str, object]:
        """The sentence-transformers ``1_Pooling/config.json`` for this pooling."""
        return {
            "word_embedding_dimension": self.dim,
            "pooling_mode_cls_token": self.mode == "cls",
            "pooling_mode_mean_tokens": self.mode == "mean",
            "pooling_mode_max_tokens": self.mode == "max",
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False,
            "include_prompt": True,
        }

    @classmethod
    def from_config(cls, config: dict[str, object], source: str = "pooling config") -> Pooling:
        """Build from a sentence-transformers pooling config; one of CLS, MEAN or MAX must be on."""
        modes: list[str] = [m for m in POOLING_MODES if config.get(_CONFIG_KEYS[m])]
        unsupported = [k for k in _UNSUPPORTED_KEYS if config.get(k)]
        if "pooling_mode" in config:  # sentence-transformers 6 writes the mode(s) by name
            named = config["pooling_mode"]
            for mode in [named] if isinstance(named, str) else list(named):  # type: ignore[call-overload]
                (modes if mode in POOLING_MODES else unsupported).append(mode)
        if unsupported or len(modes) != 1:
            raise ValueError(
                f"{source}: sbert supports exactly one of the pooling modes {', '.join(POOLING_MODES)}; "
                f"this config enables {modes + unsupported or 'none'}"
            )
        dim = config.get("word_embedding_dimension", config.get("embedding_dimension"))
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"{source}: word_embedding_dimension {dim!r} is not a positive whole number")
        return cls(dim=dim, mode=modes[0])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, mode={self.mode!r}"


_CONFIG_KEYS = {
    "mean": "pooling_mode_mean_tokens",
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
}
_UNSUPPORTED_KEYS = (
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)
