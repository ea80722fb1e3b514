"""RecipeConfig: one training run of :func:`sbert.training.recipes.train_recipe` (the CLI's flags, by
name), with what every recipe shares: its epochs, the default learning rate, the NLI pairs and the
subsample of the training examples."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sbert.base.options import (
    PAPER_CONCATENATION,
    RECIPES,
    FileLoss,
    Recipe,
    SparseObjective,
    TrainingFormat,
    TripletDistance,
    choice,
)
from sbert.data import read_snli_senteval
from sbert.data.nli import read_nli_jsonl
from sbert.data.records import NLI_LABELS, LabeledPair
from sbert.training.config import TrainingConfig

logger = logging.getLogger("sbert")

# A static model's default: a table of token vectors needs steps about 500 times the paper's 2e-5.
STATIC_LEARNING_RATE = 0.01
RECIPE_EPOCHS: dict[str, int] = {"nli": 1, "stsb": 4, "triplet": 1, "file": 1, "cross-stsb": 4, "sparse": 1}


@dataclass(frozen=True)
class RecipeConfig:
    """One training run: the recipe, where it goes, and every setting (the CLI's flags, by name).

    Examples:
        >>> RecipeConfig("stsb", "out", max_pairs=64).stage_epochs("stsb")
        4
    """

    recipe: Recipe
    output: str | Path
    base: str | None = None  # None: the bundled all-MiniLM-L6-v2
    data_dir: str | None = None
    seed: int = 42
    epochs: int | None = None  # None: the recipe's (RECIPE_EPOCHS)
    batch_size: int = 16
    learning_rate: float | None = None  # None: 2e-5, or STATIC_LEARNING_RATE for a static model
    warmup: float = 0.1
    bf16: bool = False
    eval_steps: int = 500  # 0: at epoch ends only
    checkpoint_steps: int = 500
    resume: bool = False
    show_progress_bar: bool = True
    pooling: str | None = None
    device: str | None = None
    max_pairs: int | None = None
    gather: bool = True  # mnrl, cosent under DDP: compare with every process's embeddings
    nli_files: Sequence[str] = ()
    concatenation: Sequence[str] = PAPER_CONCATENATION
    # The file recipe:
    train_file: str | None = None
    loss: FileLoss | None = None
    file_format: TrainingFormat = "auto"
    dev_file: str | None = None
    dev_retrieval: str | None = (
        None  # a BEIR folder, a downloaded BEIR set or a proxy set: keep the best NDCG@10
    )
    score_range: tuple[float, float] = (0.0, 5.0)
    labels: Sequence[str] = field(default_factory=lambda: list(NLI_LABELS))
    distance: TripletDistance = "euclidean"
    margin: float = 1.0
    skip_bad_lines: bool = False
    mini_batch_size: int = 32  # cached-mnrl: sentences embedded at once
    matryoshka_dimensions: Sequence[int] = ()  # the file's loss summed over these prefixes too
    # The sparse recipe (its base is a SPLADE model or a *ForMaskedLM folder; train_file optional):
    sparse_loss: SparseObjective = "splade"
    document_regularizer_weight: float = 3e-5  # sentence-transformers' SPLADE examples
    query_regularizer_weight: float | None = 5e-5  # None: queries not regularised (inference-free)
    regularizer_warmup: float = 1 / 3  # share of the steps over which the weights grow from 0
    max_active_dims: int | None = None  # the dev evaluation's (and the saved model's) cap
    static_learning_rate: float = 1e-3  # an inference-free model's static query table

    def __post_init__(self) -> None:
        choice(self.recipe, RECIPES, "recipe")
        if self.recipe == "file" and (self.train_file is None or self.loss is None):
            raise ValueError("the file recipe needs a training file and a loss")

    def stage_epochs(self, recipe: str) -> int:
        return self.epochs or RECIPE_EPOCHS.get(recipe, 1)

    def training_config(self, recipe: str, model: Any = None) -> TrainingConfig:
        """The trainer's settings for ``recipe``; ``model`` sets the default learning rate."""
        return TrainingConfig(
            epochs=self.stage_epochs(recipe),
            batch_size=self.batch_size,
            learning_rate=(
                default_learning_rate(model) if self.learning_rate is None else self.learning_rate
            ),
            warmup_fraction=self.warmup,
            seed=self.seed,
            bf16=self.bf16,
            eval_steps=self.eval_steps or None,
            checkpoint_steps=self.checkpoint_steps,
            show_progress_bar=self.show_progress_bar,
        )


def default_learning_rate(model: Any) -> float:
    """The paper's 2e-5 for a transformer; STATIC_LEARNING_RATE for a static model, whose token table
    barely moves at 2e-5 (benchmarks/retrieval_finetune.py trains one at 0.01).

    Examples:
        >>> default_learning_rate(None)
        2e-05
    """
    return STATIC_LEARNING_RATE if getattr(model, "is_static", False) else 2e-5


def nli_pairs(config: RecipeConfig) -> list[LabeledPair]:
    if config.nli_files:
        return [pair for path in config.nli_files for pair in read_nli_jsonl(path)]
    logger.info("no NLI file: training on SentEval's SNLI test split (the data directory has no SNLI train)")
    return read_snli_senteval("test", config.data_dir)


def subsample(examples: Sequence[Any], count: int | None, seed: int) -> list[Any]:
    """A random subset of ``count`` examples in their original order (all of them when ``count`` is None)."""
    if count is None or count >= len(examples):
        return list(examples)
    if count < 1:
        raise ValueError(f"max_pairs must be at least 1, got {count}")
    chosen = sorted(random.Random(seed).sample(range(len(examples)), count))
    return [examples[i] for i in chosen]
