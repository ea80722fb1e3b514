"""The runners behind ``sbert train``: one process or one ``torchrun`` rank, each recipe's stages.

Imported only when ``sbert train`` runs, so that ``sbert --help`` loads no torch (see ``train.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sbert.cross_encoder import CrossEncoder
from sbert.data import read_snli_senteval, read_stsb
from sbert.data.nli import nli_triplets, read_nli_jsonl
from sbert.data.records import NLI_LABELS, LabeledPair
from sbert.data.training_files import (
    read_labeled_pairs,
    read_positive_pairs_or_triplets,
    read_scored_pairs,
    read_triplets,
)
from sbert.encoder import SentenceEncoder
from sbert.evaluation import SimilarityEvaluator
from sbert.evaluation.cross_encoder import CrossEncoderEvaluator
from sbert.files import write_text_atomic
from sbert.hub import DEFAULT_MODEL
from sbert.losses import (
    CoSENTLoss,
    CosineMSELoss,
    MultipleNegativesRankingLoss,
    SentenceLoss,
    SoftmaxLoss,
    TripletLoss,
)
from sbert.losses.cross_encoder import CrossEncoderLoss
from sbert.training import Trainer, TrainingConfig, TrainingDivergedError, TrainingResult, seed_everything
from sbert.training.trainer import CHECKPOINT_DIR

logger = logging.getLogger("sbert")

RECIPE_EPOCHS = {"nli": 1, "stsb": 4, "triplet": 1, "file": 1, "cross-stsb": 4}


def run(args: argparse.Namespace) -> int:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return run_distributed(args)
    return run_recipe(args)


def run_distributed(args: argparse.Namespace) -> int:
    """One process of a ``torchrun`` launch: join the others, train, and report errors with the rank."""
    from sbert.training.distributed import (
        DistributedError,
        distributed_device,
        join_process_group,
        leave_process_group,
    )

    label = f"rank {os.environ.get('RANK', '?')} of {os.environ['WORLD_SIZE']}"
    if os.environ.get("RANK", "0") != "0":
        logger.setLevel(logging.ERROR)  # rank 0 alone tells the story
    try:
        device = distributed_device(args.device)
        args.device = str(device)
        join_process_group(device, args.rendezvous_timeout, args.ddp_timeout)
        return run_recipe(args)
    except DistributedError as error:
        print(f"sbert train: {error}", file=sys.stderr)
    except (OSError, ValueError, TypeError, TrainingDivergedError) as error:
        print(f"sbert train: {label}: error: {error}", file=sys.stderr)
    finally:
        leave_process_group()
    return 1


def run_recipe(args: argparse.Namespace) -> int:
    output = Path(args.output)
    try:
        if args.recipe == "nli-stsb":
            first_done = args.resume and (output / "nli" / "results.json").is_file()
            if not first_done:
                result = run_stage(args, "nli", output / "nli", args.base, resume=args.resume)
                if result.interrupted:
                    return 130
            # The second stage starts fresh unless it had itself written a checkpoint.
            resume = args.resume and (output / CHECKPOINT_DIR).is_dir()
            result = run_stage(args, "stsb", output, str(output / "nli"), resume=resume)
        elif args.recipe == "cross-stsb":
            result = run_cross_encoder_stage(args, output)
        else:
            result = run_stage(args, args.recipe, output, args.base, resume=args.resume)
    except TrainingDivergedError as error:
        print(f"sbert train: {error}", file=sys.stderr)
        return 1
    return 130 if result.interrupted else 0


def run_stage(
    args: argparse.Namespace, recipe: str, output: Path, base: str | None, resume: bool = False
) -> TrainingResult:
    """Train one recipe into ``output``; report STSb dev/test into ``output/results.json``."""
    seed_everything(args.seed)  # before building the loss: SoftmaxLoss's classifier is initialised randomly
    model = SentenceEncoder.from_pretrained(base, pooling=args.pooling, device=args.device)
    objective, examples = build_objective(args, recipe, model)
    examples = subsample(examples, args.max_pairs, args.seed)
    dev = _dev_evaluator(args)
    config = training_config(args, recipe)
    logger.info(
        "%s: %d training examples, %s, %d epochs, batch %d, lr %g, %s",
        recipe,
        len(examples),
        type(objective).__name__,
        config.epochs,
        config.batch_size,
        config.learning_rate,
        "bf16 autocast" if config.bf16 else "fp32",
    )
    objective.gather_across_ranks = args.gather
    trainer = Trainer(objective, examples, output, config, dev)
    result = trainer.train(resume=resume)
    if not result.interrupted and trainer.is_main:
        report(args, recipe, output, result, len(examples))
    return result


def training_config(args: argparse.Namespace, recipe: str) -> TrainingConfig:
    return TrainingConfig(
        epochs=args.epochs or RECIPE_EPOCHS.get(recipe, 1),
        batch_size=args.batch_size,
        learning_rate=args.lr,
        warmup_fraction=args.warmup,
        seed=args.seed,
        bf16=args.bf16,
        eval_steps=args.eval_steps or None,
        checkpoint_steps=args.checkpoint_steps,
        show_progress_bar=not args.no_progress,
    )


def run_cross_encoder_stage(args: argparse.Namespace, output: Path) -> TrainingResult:
    """The paper's BERT-STSb baseline: ``[CLS] A [SEP] B [SEP]`` regressed onto the 0-1 scaled gold score."""
    seed_everything(args.seed)  # the new regression head is initialised randomly
    model = CrossEncoder.from_pretrained(args.base, num_labels=1, device=args.device)
    examples = subsample(read_stsb("train", args.data_dir), args.max_pairs, args.seed)
    dev = CrossEncoderEvaluator(read_stsb("dev", args.data_dir), name="stsb-dev")
    config = training_config(args, "cross-stsb")
    trainer = Trainer(CrossEncoderLoss(model), examples, output, config, dev)
    result = trainer.train(resume=args.resume)
    if not result.interrupted and trainer.is_main:
        trained = CrossEncoder.from_pretrained(output, device=args.device)
        test = CrossEncoderEvaluator(
            read_stsb("test", args.data_dir), name="stsb-test", show_progress_bar=not args.no_progress
        )(trained)
        report(args, "cross-stsb", output, result, len(examples), test_spearman=test["spearman"])
    return result


def build_objective(
    args: argparse.Namespace, recipe: str, model: SentenceEncoder
) -> tuple[SentenceLoss, list[Any]]:
    """The loss of a recipe and its training examples."""
    if recipe == "stsb":
        return CosineMSELoss(model, score_range=(0.0, 5.0)), read_stsb("train", args.data_dir)
    if recipe == "nli":
        concatenation = [part.strip() for part in args.concatenation.split(",")]
        return SoftmaxLoss(model, NLI_LABELS, concatenation), _nli_pairs(args)
    if recipe == "triplet":
        return TripletLoss(model), nli_triplets(_nli_pairs(args))
    return _file_objective(args, model)


def _file_objective(args: argparse.Namespace, model: SentenceEncoder) -> tuple[SentenceLoss, list[Any]]:
    path, fmt, skip = args.train, args.format, args.skip_bad_lines
    if args.loss in ("cosine-mse", "cosent"):
        pairs = read_scored_pairs(path, tuple(args.score_range), fmt, skip)
        if args.loss == "cosent":
            return CoSENTLoss(model), pairs
        return CosineMSELoss(model, score_range=tuple(args.score_range)), pairs
    if args.loss == "softmax":
        labels = args.labels.split(",") if args.labels else list(NLI_LABELS)
        return SoftmaxLoss(model, labels), read_labeled_pairs(path, labels, fmt, skip)
    if args.loss == "triplet":
        return TripletLoss(model, args.distance, args.margin), read_triplets(path, fmt, skip)
    return MultipleNegativesRankingLoss(model), list(read_positive_pairs_or_triplets(path, fmt, skip))


def _nli_pairs(args: argparse.Namespace) -> list[LabeledPair]:
    if args.nli_file:
        return [pair for path in args.nli_file for pair in read_nli_jsonl(path)]
    logger.info(
        "no --nli-file: training on SentEval's SNLI test split (the data directory has no SNLI train)"
    )
    return read_snli_senteval("test", args.data_dir)


def subsample(examples: Sequence[Any], count: int | None, seed: int) -> list[Any]:
    """A random subset of ``count`` examples in their original order (all of them when ``count`` is None)."""
    if count is None or count >= len(examples):
        return list(examples)
    if count < 1:
        raise ValueError(f"--max-pairs must be at least 1, got {count}")
    chosen = sorted(random.Random(seed).sample(range(len(examples)), count))
    return [examples[i] for i in chosen]


def _dev_evaluator(args: argparse.Namespace) -> SimilarityEvaluator | None:
    if getattr(args, "dev", None):
        return SimilarityEvaluator(read_scored_pairs(args.dev, tuple(args.score_range)), name="dev")
    try:
        return SimilarityEvaluator(read_stsb("dev", args.data_dir), name="stsb-dev")
    except FileNotFoundError as error:
        logger.warning("no dev set (%s): the final model is kept, not the best", error)
        return None


def report(
    args: argparse.Namespace,
    recipe: str,
    output: Path,
    result: TrainingResult,
    examples: int,
    test_spearman: float | None = None,
) -> None:
    """Write ``results.json``; a bi-encoder is scored here on STSb test (when available)."""
    results: dict[str, Any] = {
        "recipe": recipe,
        "base": args.base or DEFAULT_MODEL,
        "seed": args.seed,
        "examples": examples,
        "steps": result.global_step,
        "seconds": round(result.seconds, 1),
        "bf16": args.bf16,
        "best_dev_spearman" + ("" if recipe == "cross-stsb" else "_cosine"): result.best_score,
        "best_step": result.best_step,
    }
    evaluate: Callable[[SentenceEncoder], dict[str, float]] | None = None
    if test_spearman is not None:
        results["stsb_test_spearman"] = test_spearman
    else:
        with contextlib.suppress(FileNotFoundError):  # no data directory: no test report
            evaluate = SimilarityEvaluator(
                read_stsb("test", args.data_dir), name="stsb-test", show_progress_bar=not args.no_progress
            )
    if evaluate is not None:
        # One evaluation: compiling an OpenVINO engine for it would cost more than it saves.
        trained = SentenceEncoder.from_pretrained(output, device=args.device, backend="torch")
        results["stsb_test_spearman_cosine"] = evaluate(trained)["spearman_cosine"]
    write_text_atomic(output / "results.json", json.dumps(results, indent=2) + "\n")
    summary = ", ".join(f"{key} {value:.2f}" for key, value in results.items() if "spearman" in key and value)
    print(f"{recipe}: model saved to {output} ({summary})")
