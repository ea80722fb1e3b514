"""The host's share of the next step, done while the device computes this one.

One background thread (made once per run) turns the next batch's texts into host tensors
(:meth:`~sbert.training.embedder.TrainingEmbedder.prepare`: cached token ids → padded or flat
tensors, pinned on CUDA). The work is numpy and tensor copies, which release the GIL; a
``DataLoader`` with worker processes would pickle every batch across processes for the same work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sbert.losses.base import example_texts
from sbert.training.embedder import EmbedderPlan, TrainingEmbedder, set_embedder


def planned_texts(objective: Any, examples: Sequence[Any]) -> list[list[str]]:
    """The lists of texts ``objective`` will embed for ``examples``, in its order: every column
    end to end (one forward pass), or CachedMNRL's mini-batches of them."""
    columns = list(zip(*(example_texts(e) for e in examples)))
    texts = [text for column in columns for text in column]
    size = getattr(objective, "mini_batch_size", None)
    if isinstance(size, int):
        return [texts[i : i + size] for i in range(0, len(texts), size)]
    return [texts]


class Prefetcher:
    """Prepares a step's host tensors on a background thread; ``close()`` ends it. Without an
    embedder (a loss with its own forward pass) it does nothing."""

    def __init__(self, embedder: TrainingEmbedder | None, objective: Any) -> None:
        self.embedder = embedder
        self.objective = objective
        self.pool = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="sbert-prefetch") if embedder else None
        )

    def before_step(
        self, batches: Sequence[Any], index: int, first: int, share: Callable[[Any], Sequence[Any]]
    ) -> None:
        """Before step ``index`` of an epoch's ``batches``: the next batch starts preparing while the
        device runs this one (the epoch's first batch too, on its first step)."""
        if self.embedder is None:
            return
        if index == first:
            self.ahead(share(batches[index]))
        if index + 1 < len(batches):
            self.ahead(share(batches[index + 1]))

    def ahead(self, examples: Sequence[Any]) -> None:
        """Start preparing the batch of ``examples`` (the next step's share)."""
        if self.embedder is None or self.pool is None:
            return
        try:
            groups = planned_texts(self.objective, examples)
        except TypeError:  # records the loss embeds in its own way: prepared when it asks
            return
        for texts in groups:
            self.embedder.expect(texts, self.pool.submit(self.embedder.prepare, texts))

    def wait(self) -> None:
        """Let the batches being prepared finish: the dev evaluation tokenizes on the main thread,
        and a Rust tokenizer refuses two threads at once ("Already borrowed")."""
        if self.embedder is not None:
            self.embedder.wait()

    def close(self) -> None:
        if self.pool is not None and self.embedder is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.embedder.forget()


def install_embedder(objective: Any, plan: EmbedderPlan | None) -> tuple[str, Prefetcher]:
    """Give ``objective`` a :class:`TrainingEmbedder` on ``plan`` where it takes one; what its
    forward pass is (for the log) and the prefetcher that feeds it (idle without an embedder)."""
    own = "the loss's own forward pass"
    if plan is None or not hasattr(objective, "token_ids"):
        return own, Prefetcher(None, objective)
    embedder = TrainingEmbedder(objective.model, objective.token_ids, plan)
    if not set_embedder(objective, embedder):
        return own, Prefetcher(None, objective)
    return plan.reason, Prefetcher(embedder, objective)
