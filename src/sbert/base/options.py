"""Every choice a user names (a precision, a backend, a pooling mode, a loss, ...), in one place.

The library, the command line and the server all take their choice lists from here. Nothing here
imports torch, so ``sbert --help`` builds its parser without loading it, and there is no copy of a
list to keep equal to another.

Example:
    >>> from sbert.base.options import PRECISIONS, Precision
    >>> PRECISIONS
    ('auto', 'float32', 'bfloat16', 'mixed', 'int8')
    >>> choice("bfloat16", PRECISIONS, "precision")
    'bfloat16'
"""

from __future__ import annotations

from typing import Literal, TypeVar, get_args

Precision = Literal["auto", "float32", "bfloat16", "mixed", "int8"]
Backend = Literal["auto", "torch", "openvino"]
PoolingMode = Literal["mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"]
ConcatenationPart = Literal["u", "v", "|u-v|", "u*v"]
TripletDistance = Literal["euclidean", "manhattan", "cosine"]
FileLoss = Literal["cosine-mse", "cosent", "softmax", "triplet", "mnrl", "cached-mnrl"]
TrainingFormat = Literal["auto", "csv", "tsv", "jsonl"]
Recipe = Literal["nli", "stsb", "nli-stsb", "triplet", "file", "cross-stsb", "sparse"]
SparseObjective = Literal["splade", "sparse-mnrl"]  # the sparse recipe's losses
Metric = Literal["cosine", "dot", "euclidean", "manhattan"]
SamplingStrategy = Literal["top", "random"]  # hard-negative mining
MinedFormat = Literal["n-tuple", "triplet", "labeled-pair", "labeled-list"]  # hard-negative mining's output

PRECISIONS: tuple[Precision, ...] = get_args(Precision)
BACKENDS: tuple[Backend, ...] = get_args(Backend)
POOLING_MODES: tuple[PoolingMode, ...] = get_args(PoolingMode)
PAPER_POOLING_MODES: tuple[PoolingMode, ...] = ("mean", "cls", "max")  # the paper's Table 7
CONCATENATION_PARTS: tuple[ConcatenationPart, ...] = get_args(ConcatenationPart)
PAPER_CONCATENATION: tuple[ConcatenationPart, ...] = ("u", "v", "|u-v|")  # the paper's (u, v, |u−v|)
TRIPLET_DISTANCES: tuple[TripletDistance, ...] = get_args(TripletDistance)
FILE_LOSSES: tuple[FileLoss, ...] = get_args(FileLoss)
TRAINING_FORMATS: tuple[TrainingFormat, ...] = get_args(TrainingFormat)
RECIPES: tuple[Recipe, ...] = get_args(Recipe)
SPARSE_OBJECTIVES: tuple[SparseObjective, ...] = get_args(SparseObjective)
METRICS: tuple[Metric, ...] = get_args(Metric)
SAMPLING_STRATEGIES: tuple[SamplingStrategy, ...] = get_args(SamplingStrategy)
MINED_FORMATS: tuple[MinedFormat, ...] = get_args(MinedFormat)

T = TypeVar("T", bound=str)


def choice(value: str, choices: tuple[T, ...], what: str) -> T:
    """``value`` (in any case) as one of ``choices``, else a ``ValueError`` naming ``what`` and the choices."""
    normalised = value.lower() if isinstance(value, str) else value
    for option in choices:
        if normalised == option:
            return option
    raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(choices)}")


# Inputs at least this long get a progress bar by default; shorter ones finish before it would help.
# Here, not in sbert.encoder.model, so a cold `sbert encode` can tell without importing torch.
PROGRESS_BAR_MIN_SENTENCES = 1000
