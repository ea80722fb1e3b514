"""The steps of ``SentenceEncoder.encode()`` around its runner: the options checked before any engine
is built, and the vectors checked finite before the output step (:mod:`sbert.encoder.output`)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from sbert.base.inputs import check_count
from sbert.inference.plan import EnginePlan
from sbert.inference.runner import RunOptions


def run_options(
    batch_size: int, max_tokens: int | None, batch_cost_tokens: int | None, pack: bool
) -> RunOptions:
    check_count("batch_size", batch_size)
    for name, value in (("max_tokens", max_tokens), ("batch_cost_tokens", batch_cost_tokens)):
        if value is not None:
            check_count(name, value)
    return RunOptions(batch_size, max_tokens, batch_cost_tokens, pack)


def prompt_length(features: Mapping[str, Tensor]) -> int:
    """The prompt's tokens, which pooling leaves out where ``include_prompt`` is off (0: none)."""
    return int(features["prompt_length"]) if "prompt_length" in features else 0


def check_finite(embeddings: Tensor, plan: EnginePlan) -> None:
    """Raise ``FloatingPointError`` naming the first sentence whose vector holds NaN or inf."""
    if torch.isfinite(embeddings.sum(dtype=torch.float64)):  # one pass: a NaN or inf anywhere makes it so
        return
    bad = (~torch.isfinite(embeddings)).any(dim=1).nonzero()
    if len(bad):
        raise FloatingPointError(
            f"sentence {int(bad[0])} (of {len(embeddings)}) got a vector with NaN or inf from "
            f"{plan.backend}/{plan.precision}; {len(bad)} vector(s) in all"
        )
