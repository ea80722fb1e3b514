"""Table 7 and the paper's cost argument, measured: sentences per second, and cross- against bi-encoder.

Every figure is the median of ``repeats`` timed runs after one warm-up, the contenders alternating
so that load from other processes hits them alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch

from sbert.applications.mining import paraphrase_mining
from sbert.encoder.model import SentenceEncoder


def median_seconds(runners: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median wall time of each runner: one warm-up each, then ``repeats`` rounds in rotating order."""
    for run in runners.values():
        run()
    names = list(runners)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            runners[name]()
            seconds[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in seconds.items()}


def encode_in_given_order(
    model: SentenceEncoder, sentences: Sequence[str], batch_size: int = 32
) -> np.ndarray:
    """Encode in fp32 without smart batching: batches in input order, each padded to its longest member.

    The paper's Table 7 baseline ("SBERT-base" without smart batching).
    """
    tokenized = model.token_ids(list(sentences))
    model.eval()
    vectors = []
    with torch.inference_mode():
        for start in range(0, len(sentences), batch_size):
            features = model.transformer.collate(tokenized.ids[start : start + batch_size])
            vectors.append(model(features))  # (batch, dim)
    return torch.cat(vectors).numpy()


def sentences_per_second(
    encoders: dict[str, Callable[[Sequence[str]], Any]], sentences: Sequence[str], repeats: int
) -> dict[str, float]:
    """Each encoder's throughput on the same sentences."""
    runners: dict[str, Callable[[], Any]] = {
        name: partial(encode, sentences) for name, encode in encoders.items()
    }
    return {name: len(sentences) / s for name, s in median_seconds(runners, repeats).items()}


def cross_versus_bi_cost(
    cross_pairs_per_second: float, bi_encode_and_mine_seconds: float, sentences: int
) -> dict[str, float]:
    """The most similar pair among ``sentences``: the cross-encoder must score every pair.

    Its time is extrapolated from its measured rate (running it would take hours); the bi-encoder's
    (encode, then mine) is measured.
    """
    pairs = sentences * (sentences - 1) // 2
    cross_seconds = pairs / cross_pairs_per_second
    return {
        "sentences": sentences,
        "pairs": pairs,
        "cross_pairs_per_second": cross_pairs_per_second,
        "cross_hours_extrapolated": cross_seconds / 3600,
        "bi_seconds_measured": bi_encode_and_mine_seconds,
        "ratio": cross_seconds / bi_encode_and_mine_seconds,
    }


def most_similar_pair_seconds(model: SentenceEncoder, sentences: Sequence[str], repeats: int) -> float:
    """Encode ``sentences`` and find the most similar pair: the bi-encoder side of the cost argument."""

    def mine() -> None:
        paraphrase_mining(model.encode(list(sentences), show_progress_bar=False), top_k=10, max_pairs=1)

    return median_seconds({"mine": mine}, repeats)["mine"]
