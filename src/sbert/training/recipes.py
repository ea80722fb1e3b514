"""The paper's fine-tuning recipes, and training from a user's file, as library calls.

``sbert train RECIPE`` and ``sbert reproduce`` both build a :class:`RecipeConfig` and call
:func:`train_recipe`; nothing here knows about the command line.

- ``nli``: classification objective (SoftmaxLoss over (u, v, |u−v|)), 1 epoch, on the SNLI/MultiNLI
  ``.jsonl`` files given, else on the SNLI *test* split of SentEval's copy (the largest NLI set
  offline). Dev: STSb dev, as the paper's Table 6.
- ``stsb``: regression objective (CosineMSELoss, gold 0-5 scaled to 0-1), 4 epochs on STSb train.
- ``nli-stsb``: ``nli`` into ``OUTPUT/nli``, then ``stsb`` from that model into ``OUTPUT``.
- ``triplet``: triplet objective (Euclidean, margin 1) on (premise, entailment, contradiction).
- ``file``: any loss on a user's CSV/TSV/JSONL pairs or triplets, with an optional scored dev file.
- ``cross-stsb``: the paper's BERT-STSb cross-encoder baseline, 4 epochs on STSb train.
- ``sparse``: a SPLADE sparse encoder (SpladeLoss: in-batch negatives plus FLOPS regularisation),
  kept by NDCG@10 on a retrieval dev set (:mod:`sbert.training.sparse_recipe`).

Every recipe keeps the model with the best dev Spearman and writes ``OUTPUT/results.json`` (STSb test
when the data directory has it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sbert.base.files import write_text_atomic
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
from sbert.cross_encoder import CrossEncoder
from sbert.cross_encoder.evaluation import CrossEncoderEvaluator
from sbert.cross_encoder.loss import CrossEncoderLoss
from sbert.data import read_snli_senteval, read_stsb
from sbert.data.beir import load_retrieval_set
from sbert.data.nli import nli_triplets, read_nli_jsonl
from sbert.data.records import NLI_LABELS, LabeledPair
from sbert.data.training_files import (
    read_labeled_pairs,
    read_positive_pairs_or_triplets,
    read_scored_pairs,
    read_triplets,
)
from sbert.encoder.hub import DEFAULT_MODEL
from sbert.encoder.model import SentenceEncoder
from sbert.evaluation import SimilarityEvaluator
from sbert.evaluation.retrieval import RetrievalEvaluator
from sbert.losses import (
    CachedMultipleNegativesRankingLoss,
    CoSENTLoss,
    CosineMSELoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
    SentenceLoss,
    SoftmaxLoss,
    TripletLoss,
)
from sbert.training.config import TrainingConfig
from sbert.training.output_dir import CHECKPOINT_DIR, claim_training_output
from sbert.training.trainer import Trainer, TrainingResult, seed_everything

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


def train_recipe(config: RecipeConfig) -> TrainingResult:
    """Train ``config.recipe`` into ``config.output``; ``results.json`` there says how it scored.

    Raises:
        TrainingDivergedError: The loss stopped being finite.
        FileNotFoundError, ValueError: Missing data or a bad training file (named, with its line).
    """
    with claim_training_output(config.output) as output:  # before any model loads
        return _train_recipe(config, output)


def _train_recipe(config: RecipeConfig, output: Path) -> TrainingResult:
    if config.recipe == "cross-stsb":
        return _train_cross_encoder(config, output)
    if config.recipe == "sparse":
        from sbert.training.sparse_recipe import train_sparse

        return train_sparse(config, output)
    if config.recipe != "nli-stsb":
        return train_stage(config, config.recipe, output, config.base, config.resume)
    if not (config.resume and (output / "nli" / "results.json").is_file()):
        result = train_stage(config, "nli", output / "nli", config.base, config.resume)
        if result.interrupted:
            return result
    # The second stage starts fresh unless it had itself written a checkpoint.
    resume = config.resume and (output / CHECKPOINT_DIR).is_dir()
    return train_stage(config, "stsb", output, str(output / "nli"), resume)


def default_learning_rate(model: Any) -> float:
    """The paper's 2e-5 for a transformer; STATIC_LEARNING_RATE for a static model, whose token table
    barely moves at 2e-5 (benchmarks/retrieval_finetune.py trains one at 0.01).

    Examples:
        >>> default_learning_rate(None)
        2e-05
    """
    return STATIC_LEARNING_RATE if getattr(model, "is_static", False) else 2e-5


def train_stage(
    config: RecipeConfig, recipe: str, output: Path, base: str | None, resume: bool = False
) -> TrainingResult:
    """Train one recipe into ``output``; report STSb dev/test into ``output/results.json``."""
    seed_everything(config.seed)  # before building the loss: SoftmaxLoss's classifier is initialised randomly
    model = SentenceEncoder.from_pretrained(base, pooling=config.pooling, device=config.device)
    objective, examples = _objective(config, recipe, model)
    examples = subsample(examples, config.max_pairs, config.seed)
    training = config.training_config(recipe, model)
    logger.info(
        "%s: %d training examples, %s, %d epochs, batch %d, lr %g, %s",
        recipe,
        len(examples),
        type(objective).__name__,
        training.epochs,
        training.batch_size,
        training.learning_rate,
        "bf16 autocast" if training.bf16 else "fp32",
    )
    objective.gather_across_ranks = config.gather
    trainer = Trainer(objective, examples, output, training, _dev_evaluator(config))
    result = trainer.train(resume=resume)
    if not result.interrupted and trainer.is_main:
        _report(config, recipe, output, result, len(examples))
    return result


def _train_cross_encoder(config: RecipeConfig, output: Path) -> TrainingResult:
    """The paper's BERT-STSb baseline: ``[CLS] A [SEP] B [SEP]`` regressed onto the 0-1 scaled gold score."""
    seed_everything(config.seed)  # the new regression head is initialised randomly
    model = CrossEncoder.from_pretrained(config.base, num_labels=1, device=config.device)
    examples = subsample(read_stsb("train", config.data_dir), config.max_pairs, config.seed)
    dev = CrossEncoderEvaluator(read_stsb("dev", config.data_dir), name="stsb-dev")
    trainer = Trainer(CrossEncoderLoss(model), examples, output, config.training_config("cross-stsb"), dev)
    result = trainer.train(resume=config.resume)
    if not result.interrupted and trainer.is_main:
        trained = CrossEncoder.from_pretrained(output, device=config.device)
        test = CrossEncoderEvaluator(
            read_stsb("test", config.data_dir), name="stsb-test", show_progress_bar=config.show_progress_bar
        )(trained)
        _report(config, "cross-stsb", output, result, len(examples), test_spearman=test["spearman"])
    return result


def _objective(config: RecipeConfig, recipe: str, model: SentenceEncoder) -> tuple[SentenceLoss, list[Any]]:
    """The loss of a recipe and its training examples."""
    if recipe == "stsb":
        return CosineMSELoss(model, score_range=(0.0, 5.0)), read_stsb("train", config.data_dir)
    if recipe == "nli":
        return SoftmaxLoss(model, NLI_LABELS, config.concatenation), _nli_pairs(config)
    if recipe == "triplet":
        return TripletLoss(model), nli_triplets(_nli_pairs(config))
    return _file_objective(config, model)


def _file_objective(config: RecipeConfig, model: SentenceEncoder) -> tuple[SentenceLoss, list[Any]]:
    loss, examples = _file_loss(config, model)
    if config.matryoshka_dimensions:
        return MatryoshkaLoss(loss, config.matryoshka_dimensions), examples
    return loss, examples


def _file_loss(config: RecipeConfig, model: SentenceEncoder) -> tuple[SentenceLoss, list[Any]]:
    path, fmt, skip = str(config.train_file), config.file_format, config.skip_bad_lines
    if config.loss in ("cosine-mse", "cosent"):
        pairs = read_scored_pairs(path, config.score_range, fmt, skip)
        if config.loss == "cosent":
            return CoSENTLoss(model), pairs
        return CosineMSELoss(model, score_range=config.score_range), pairs
    if config.loss == "softmax":
        labels = list(config.labels)
        return SoftmaxLoss(model, labels), read_labeled_pairs(path, labels, fmt, skip)
    if config.loss == "triplet":
        return TripletLoss(model, config.distance, config.margin), read_triplets(path, fmt, skip)
    examples = list(read_positive_pairs_or_triplets(path, fmt, skip))
    if config.loss == "cached-mnrl":
        return CachedMultipleNegativesRankingLoss(model, mini_batch_size=config.mini_batch_size), examples
    return MultipleNegativesRankingLoss(model), examples


def _nli_pairs(config: RecipeConfig) -> list[LabeledPair]:
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


def _dev_evaluator(config: RecipeConfig) -> SimilarityEvaluator | RetrievalEvaluator | None:
    if config.dev_retrieval:
        return RetrievalEvaluator(load_retrieval_set(config.dev_retrieval, config.data_dir, split="dev"))
    if config.dev_file:
        return SimilarityEvaluator(read_scored_pairs(config.dev_file, config.score_range), name="dev")
    try:
        return SimilarityEvaluator(read_stsb("dev", config.data_dir), name="stsb-dev")
    except FileNotFoundError as error:
        logger.warning("no dev set (%s): the final model is kept, not the best", error)
        return None


def _best_dev_key(config: RecipeConfig, recipe: str) -> str:
    if config.dev_retrieval:
        return "best_dev_ndcg@10"
    return "best_dev_spearman" + ("" if recipe == "cross-stsb" else "_cosine")


def _report(
    config: RecipeConfig,
    recipe: str,
    output: Path,
    result: TrainingResult,
    examples: int,
    test_spearman: float | None = None,
) -> None:
    """Write ``results.json``; a bi-encoder is scored here on STSb test (when available)."""
    results: dict[str, Any] = {
        "recipe": recipe,
        "base": config.base or DEFAULT_MODEL,
        "seed": config.seed,
        "examples": examples,
        "steps": result.global_step,
        "seconds": round(result.seconds, 1),
        "bf16": config.bf16,
        _best_dev_key(config, recipe): result.best_score,
        "best_step": result.best_step,
    }
    evaluate: SimilarityEvaluator | None = None
    if test_spearman is not None:
        results["stsb_test_spearman"] = test_spearman
    else:
        with contextlib.suppress(FileNotFoundError):  # no data directory: no test report
            test = read_stsb("test", config.data_dir)
            evaluate = SimilarityEvaluator(test, name="stsb-test", show_progress_bar=config.show_progress_bar)
    if evaluate is not None:
        # One evaluation: compiling an OpenVINO engine for it would cost more than it saves.
        trained = SentenceEncoder.from_pretrained(output, device=config.device, backend="torch")
        results["stsb_test_spearman_cosine"] = evaluate(trained)["spearman_cosine"]
    write_text_atomic(output / "results.json", json.dumps(results, indent=2) + "\n")
