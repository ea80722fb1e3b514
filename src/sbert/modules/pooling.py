"""Pooling: token vectors → one sentence vector (the paper's CLS, MEAN and MAX strategies, and every
mode sentence-transformers has added since)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from sbert.base.files import read_json
from sbert.base.options import POOLING_MODES, choice
from sbert.modules.checks import check_pooling_config
from sbert.modules.module import Module


def check_pooling_mode(mode: str) -> str:
    """Return ``mode`` normalised to lower case, or raise ``ValueError`` listing the choices."""
    return choice(mode, POOLING_MODES, "pooling mode")


class Pooling(Module):
    """Reduce a sentence's token vectors to one fixed-size vector, as sentence-transformers does.

    Args:
        dim: Size of each token vector.
        mode: One mode or several (their vectors are concatenated, in order):
            ``"mean"`` (default: mean over real tokens), ``"cls"`` (the first real token),
            ``"max"`` (max over time; padding can never win), ``"mean_sqrt_len_tokens"`` (the sum
            over real tokens divided by the square root of their count), ``"weightedmean"`` (token
            i of the sentence weighted by i, counted from 1) or ``"lasttoken"`` (the last real
            token: decoder embedding models; right or left padding).
        include_prompt: Whether a prompt's tokens are pooled too. ``False``: the first
            ``prompt_length`` real tokens are left out (sentence-transformers' ``include_prompt``).

    Examples:
        >>> import torch
        >>> pool = Pooling(dim=2, mode="mean")
        >>> tokens = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]])  # (batch, seq, dim)
        >>> mask = torch.tensor([[1, 1, 0]])                                 # last token is padding
        >>> pool(tokens, mask)
        tensor([[2., 3.]])
        >>> Pooling(dim=2, mode=("cls", "lasttoken"))(tokens, mask)
        tensor([[1., 2., 3., 4.]])
    """

    st_type = "sentence_transformers.models.Pooling"
    config_keys = (
        "word_embedding_dimension",
        "pooling_mode_cls_token",
        "pooling_mode_max_tokens",
        "pooling_mode_mean_tokens",
        "pooling_mode_mean_sqrt_len_tokens",
        "pooling_mode_weightedmean_tokens",
        "pooling_mode_lasttoken",
        "include_prompt",
    )

    def __init__(self, dim: int, mode: str | Sequence[str] = "mean", include_prompt: bool = True) -> None:
        super().__init__()
        self.dim = dim
        self.modes = tuple(check_pooling_mode(m) for m in ([mode] if isinstance(mode, str) else mode))
        if not self.modes:
            raise ValueError(f"no pooling mode given; choose among {', '.join(POOLING_MODES)}")
        self.include_prompt = include_prompt

    @property
    def mode(self) -> str:
        """The mode, or the modes joined by ``+``."""
        return "+".join(self.modes)

    @property
    def output_dim(self) -> int:
        """Size of the sentence vector: ``dim`` for each mode."""
        return self.dim * len(self.modes)

    def forward(self, token_embeddings: Tensor, attention_mask: Tensor, prompt_length: int = 0) -> Tensor:
        # token_embeddings: (batch, seq, dim); attention_mask: (batch, seq), 1 for real tokens
        mask = attention_mask
        if prompt_length and not self.include_prompt:
            mask = without_prompt(attention_mask, prompt_length)
        pooled = [_POOLERS[mode](token_embeddings, mask, attention_mask) for mode in self.modes]
        return pooled[0] if len(pooled) == 1 else torch.cat(pooled, dim=-1)  # (batch, output_dim)

    def config(self) -> dict[str, Any]:
        """The sentence-transformers ``1_Pooling/config.json`` for this pooling: the
        ``pooling_mode_*`` flags every version reads, and ``pooling_mode`` itself where the modes'
        order is not the one the flags imply (only sentence-transformers 6 reads that order)."""
        config: dict[str, object] = {
            "word_embedding_dimension": self.dim,
            **{key: mode in self.modes for mode, key in _CONFIG_KEYS.items()},
            "include_prompt": self.include_prompt,
        }
        if list(self.modes) != [mode for mode in _CONFIG_KEYS if mode in self.modes]:
            config["pooling_mode"] = list(self.modes)
        return config

    @classmethod
    def from_config(cls, config: dict[str, object], source: str = "pooling config") -> Pooling:
        """Build from a sentence-transformers pooling config: the ``pooling_mode_*`` flags (in
        sentence-transformers' order) or, as sentence-transformers 6 writes it, ``pooling_mode``.

        Raises:
            ValueError: no mode is set (sentence-transformers would quietly take mean; sbert does not
                guess), or an unknown one; the message names the file and the key.
        """
        modes = [mode for mode, key in _CONFIG_KEYS.items() if config.get(key)]
        if "pooling_mode" in config:
            named = config["pooling_mode"]
            modes = [named] if isinstance(named, str) else list(named)  # type: ignore[call-overload]
        if not modes:
            raise ValueError(
                f"{source}: no pooling mode: set pooling_mode (or a pooling_mode_* flag) to one of "
                f"{', '.join(POOLING_MODES)}"
            )
        unknown = [mode for mode in modes if mode not in POOLING_MODES]
        if unknown:
            raise ValueError(f"{source}: pooling_mode {unknown}: choose among {', '.join(POOLING_MODES)}")
        dim = config.get("word_embedding_dimension", config.get("embedding_dimension"))
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"{source}: word_embedding_dimension {dim!r} is not a positive whole number")
        return cls(dim=dim, mode=modes, include_prompt=bool(config.get("include_prompt", True)))

    @classmethod
    def load(cls, folder: Path, **options: Any) -> Pooling:
        """Read ``config.json`` (its flags checked to be JSON booleans).

        Raises:
            ModelLoadError: the file is missing, not JSON, or a flag is not a boolean.
            ValueError: no mode or an unknown one (:meth:`from_config`).
        """
        file = folder / cls.config_file_name
        return cls.from_config(check_pooling_config(read_json(file), file), source=str(file))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, mode={self.mode!r}"


# sentence-transformers' config keys, in the order it concatenates the modes' vectors.
_CONFIG_KEYS = {
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
    "mean": "pooling_mode_mean_tokens",
    "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}


def without_prompt(attention_mask: Tensor, prompt_length: int) -> Tensor:
    """The mask with the first ``prompt_length`` real tokens of each row zeroed (after any left padding)."""
    first_real = attention_mask.to(torch.int32).argmax(dim=1, keepdim=True)  # (batch, 1)
    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)[None]  # (1, seq)
    return attention_mask * (positions >= first_real + prompt_length).to(attention_mask.dtype)


def _cls(tokens: Tensor, mask: Tensor, _: Tensor) -> Tensor:
    # The first real token (not position 0: left padding, or a prompt left out).
    first = mask.to(torch.int32).argmax(dim=1)  # (batch,)
    return tokens[torch.arange(tokens.shape[0], device=tokens.device), first]


def _max(tokens: Tensor, mask: Tensor, _: Tensor) -> Tensor:
    # The lowest finite value, not -inf: a sentence with no real token then gives a finite vector.
    lowest = torch.finfo(tokens.dtype).min
    return tokens.masked_fill(mask[..., None] == 0, lowest).max(dim=1).values


def _sum_and_count(tokens: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    weights = mask[..., None].to(tokens.dtype)  # (batch, seq, 1)
    return (tokens * weights).sum(dim=1), weights.sum(dim=1).clamp(min=1e-9)  # (batch, dim), (batch, 1)


def _mean(tokens: Tensor, mask: Tensor, _: Tensor) -> Tensor:
    summed, count = _sum_and_count(tokens, mask)
    return summed / count


def _mean_sqrt_len(tokens: Tensor, mask: Tensor, _: Tensor) -> Tensor:
    summed, count = _sum_and_count(tokens, mask)
    return summed / count.sqrt()


def _weighted_mean(tokens: Tensor, mask: Tensor, attention_mask: Tensor) -> Tensor:
    # Weights 1, 2, ... from the first real token of the row (left padding shifts them, as in
    # sentence-transformers, which counts from the attention mask before a prompt is left out).
    positions = torch.arange(1, tokens.shape[1] + 1, device=tokens.device, dtype=tokens.dtype)[None]
    shift = attention_mask.to(torch.int32).argmax(dim=1, keepdim=True).to(tokens.dtype)
    weights = mask.to(tokens.dtype) * (positions - shift)  # (batch, seq)
    summed = (tokens * weights[..., None]).sum(dim=1)
    return summed / weights.sum(dim=1, keepdim=True).clamp(min=1e-9)


def _last_token(tokens: Tensor, mask: Tensor, _: Tensor) -> Tensor:
    # The last real token, found from the right so that right and left padding both work.
    seq = tokens.shape[1]
    found, from_end = mask.to(torch.int32).flip(1).max(dim=1)  # (batch,), (batch,)
    last = torch.where(found == 0, seq - 1, seq - 1 - from_end)
    picked = tokens[torch.arange(tokens.shape[0], device=tokens.device), last]  # (batch, dim)
    return picked * found[:, None].to(tokens.dtype)  # a row with no real token gives zeros


_POOLERS = {
    "mean": _mean,
    "cls": _cls,
    "max": _max,
    "mean_sqrt_len_tokens": _mean_sqrt_len,
    "weightedmean": _weighted_mean,
    "lasttoken": _last_token,
}
