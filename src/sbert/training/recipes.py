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
import logging
from pathlib import Path
from typing import Any

from sbert.base import json_text
from sbert.base.files import write_text_atomic
from sbert.cross_encoder import CrossEncoder
from sbert.data import read_stsb
from sbert.data.beir import load_retrieval_set
from sbert.data.nli import nli_triplets
from sbert.data.records import NLI_LABELS
from sbert.data.training_files import (
    read_labeled_pairs,
    read_positive_pairs_or_triplets,
    read_scored_pairs,
    read_triplets,
)
from sbert.encoder.model import SentenceEncoder
from sbert.evaluation import SimilarityEvaluator
from sbert.evaluation.cross_encoder import CrossEncoderEvaluator
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
from sbert.losses.cross_encoder import CrossEncoderLoss
from sbert.model.hub import DEFAULT_MODEL
from sbert.training.output_dir import CHECKPOINT_DIR, claim_training_output
from sbert.training.recipe_config import (  # re-exported: the recipes' settings live there
    RECIPE_EPOCHS,
    STATIC_LEARNING_RATE,
    RecipeConfig,
    default_learning_rate,
    nli_pairs,
    subsample,
)
from sbert.training.sparse_recipe import train_sparse
from sbert.training.trainer import Trainer, TrainingResult, seed_everything

logger = logging.getLogger("sbert")

__all__ = [
    "RECIPE_EPOCHS",
    "STATIC_LEARNING_RATE",
    "RecipeConfig",
    "default_learning_rate",
    "subsample",
    "train_recipe",
    "train_stage",
]


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
        return SoftmaxLoss(model, NLI_LABELS, config.concatenation), nli_pairs(config)
    if recipe == "triplet":
        return TripletLoss(model), nli_triplets(nli_pairs(config))
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
    write_text_atomic(output / "results.json", json_text.dumps(results, indent=2) + "\n")
