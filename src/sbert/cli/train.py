"""``sbert train``: the paper's fine-tuning recipes (nli, stsb, nli-stsb, triplet) and training from a file.

Recipes and their data (the data directory holds no SNLI/MultiNLI train split, see below):

- ``nli``: classification objective (SoftmaxLoss over (u, v, |u−v|)), 1 epoch. Trains on the SNLI
  files given with ``--nli-file`` (the ``.jsonl`` releases of SNLI/MultiNLI); without them, on the
  SNLI *test* split of SentEval's copy (9,824 pairs, the largest NLI set offline), so that the
  recipe runs offline. Dev: STSb dev, as the paper's Table 6; SNLI test is then not used for anything
  else, and SNLI dev stays untouched.
- ``stsb``: regression objective (CosineMSELoss, gold 0-5 scaled to 0-1), 4 epochs on STSb train.
- ``nli-stsb``: ``nli`` into ``OUTPUT/nli``, then ``stsb`` from that model into ``OUTPUT``.
- ``triplet``: triplet objective (Euclidean, margin 1) on (premise, entailment, contradiction)
  triplets built from the same NLI pairs, 1 epoch.
- ``file``: any loss on a user's CSV/TSV/JSONL pairs or triplets, with an optional scored dev file.
- ``cross-stsb``: the paper's BERT-STSb cross-encoder baseline: a regression head on
  ``[CLS] A [SEP] B [SEP]``, sigmoid output fitted to the 0-1 scaled score, 4 epochs on STSb train.

Every recipe keeps the model with the best STSb dev Spearman, then reports STSb test in
``OUTPUT/results.json`` when the data directory has it.
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

from sbert.cli.common import add_data_argument
from sbert.cross_encoder import CrossEncoder
from sbert.data import read_snli_senteval, read_stsb
from sbert.data.nli import nli_triplets, read_nli_jsonl
from sbert.data.records import NLI_LABELS, LabeledPair
from sbert.data.training_files import (
    TRAINING_FORMATS,
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
    CONCATENATION_PARTS,
    PAPER_CONCATENATION,
    TRIPLET_DISTANCES,
    CoSENTLoss,
    CosineMSELoss,
    MultipleNegativesRankingLoss,
    SentenceLoss,
    SoftmaxLoss,
    TripletLoss,
)
from sbert.losses.cross_encoder import CrossEncoderLoss
from sbert.modules.pooling import POOLING_MODES
from sbert.training import Trainer, TrainingConfig, TrainingDivergedError, TrainingResult, seed_everything
from sbert.training.trainer import CHECKPOINT_DIR

logger = logging.getLogger("sbert")

RECIPE_EPOCHS = {"nli": 1, "stsb": 4, "triplet": 1, "file": 1, "cross-stsb": 4}
FILE_LOSSES = ("cosine-mse", "cosent", "softmax", "triplet", "mnrl")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        help="fine-tune a model with the paper's objectives",
        description="Fine-tune a model: the paper's recipes, or any loss on your own pairs/triplets file.",
    )
    recipes = parser.add_subparsers(dest="recipe", metavar="RECIPE", required=True)
    helps = {
        "nli": "classification objective on NLI pairs (1 epoch)",
        "stsb": "regression objective on STSb train (4 epochs)",
        "nli-stsb": "nli, then stsb from its model",
        "triplet": "triplet objective on NLI triplets (1 epoch)",
        "file": "any loss on your own CSV/TSV/JSONL pairs or triplets",
        "cross-stsb": "BERT cross-encoder, regression on STSb train (4 epochs): the paper's baseline",
    }
    for name, text in helps.items():
        recipe = recipes.add_parser(name, help=text, description=text)
        _add_common_arguments(recipe)
        if name in ("nli", "nli-stsb", "triplet"):
            recipe.add_argument(
                "--nli-file",
                action="append",
                default=None,
                help="SNLI/MultiNLI .jsonl release to train on (repeatable; default: SentEval's SNLI test)",
            )
        if name in ("nli", "nli-stsb"):
            recipe.add_argument(
                "--concatenation",
                default=",".join(PAPER_CONCATENATION),
                help=f"classifier features, comma-separated among {', '.join(CONCATENATION_PARTS)} "
                "(default: u,v,|u-v|)",
            )
        if name == "file":
            _add_file_arguments(recipe)
        recipe.set_defaults(handler=run)


def _add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base", default=None, help=f"model to start from (default: bundled {DEFAULT_MODEL})"
    )
    parser.add_argument("--output", "-o", required=True, help="output directory (becomes a model directory)")
    parser.add_argument("--pooling", choices=POOLING_MODES, default=None, help="override the base's pooling")
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda if available)")
    parser.add_argument("--max-pairs", type=int, default=None, help="train on a random subset of N examples")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--epochs", type=int, default=None, help="default: the recipe's (nli 1, stsb 4)")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=16,
        help="examples per optimiser step, over all processes (default 16)",
    )
    parser.add_argument("--lr", type=float, default=2e-5, help="peak learning rate (default 2e-5)")
    parser.add_argument("--warmup", type=float, default=0.1, help="warm-up share of the steps (default 0.1)")
    parser.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="bf16 autocast on CPUs with native bf16 (default: off, exact fp32)",
    )
    parser.add_argument(
        "--eval-steps", type=int, default=500, help="dev evaluation every N steps, 0: at epoch ends only"
    )
    parser.add_argument("--checkpoint-steps", type=int, default=500, help="checkpoint every N steps")
    parser.add_argument("--resume", action="store_true", help="continue from OUTPUT/checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_data_argument(parser)
    ddp = parser.add_argument_group("several processes (under torchrun)")
    ddp.add_argument(
        "--gather",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="mnrl, cosent: compare with the embeddings of every process (default), or of each process's share",
    )
    ddp.add_argument(
        "--rendezvous-timeout",
        type=float,
        default=30.0,
        help="seconds to reach the other processes (default 30)",
    )
    ddp.add_argument(
        "--ddp-timeout",
        type=float,
        default=1800.0,
        help="seconds a process waits for the others in one step, dev evaluations included (default 1800)",
    )


def _add_file_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train", required=True, help="training file: .csv, .tsv or .jsonl with a header")
    parser.add_argument("--loss", choices=FILE_LOSSES, required=True)
    parser.add_argument("--format", choices=TRAINING_FORMATS, default="auto")
    parser.add_argument("--dev", default=None, help="scored dev pairs (sentence1, sentence2, score)")
    parser.add_argument(
        "--score-range", type=float, nargs=2, default=(0.0, 5.0), metavar=("LOW", "HIGH"), help="default 0 5"
    )
    parser.add_argument("--labels", default=None, help="softmax: comma-separated label set (default: NLI's)")
    parser.add_argument("--distance", choices=TRIPLET_DISTANCES, default="euclidean", help="triplet loss")
    parser.add_argument("--margin", type=float, default=1.0, help="triplet loss margin")
    parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines (and count them)")


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
