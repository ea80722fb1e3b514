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
- ``sparse``: a SPLADE sparse encoder from ``--base`` (a SPLADE or ``*ForMaskedLM`` folder), SpladeLoss
  (in-batch negatives + FLOPS regularisation) on ``--train`` pairs/triplets or NLI triplets, kept by
  NDCG@10 on ``--dev-retrieval`` (default stsb-proxy).

Every recipe keeps the model with the best STSb dev Spearman, then reports STSb test in
``OUTPUT/results.json`` when the data directory has it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.cli.common import (
    add_data_argument,
    add_progress_arguments,
    finite_float,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    unit_interval,
)
from sbert.encoder.hub import DEFAULT_MODEL

if TYPE_CHECKING:
    from sbert.training.recipes import RecipeConfig

from sbert.base.options import (
    CONCATENATION_PARTS,
    FILE_LOSSES,
    PAPER_CONCATENATION,
    POOLING_MODES,
    SPARSE_OBJECTIVES,
    TRAINING_FORMATS,
    TRIPLET_DISTANCES,
)


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
        "sparse": "SPLADE sparse encoder: SpladeLoss on pairs/triplets, kept by retrieval NDCG@10",
    }
    for name, text in helps.items():
        recipe = recipes.add_parser(name, help=text, description=text)
        _add_common_arguments(recipe)
        if name in ("nli", "nli-stsb", "triplet", "sparse"):
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
        if name == "sparse":
            _add_sparse_arguments(recipe)
        recipe.set_defaults(handler=run)


def _add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base", default=None, help=f"model to start from (default: bundled {DEFAULT_MODEL})"
    )
    parser.add_argument("--output", "-o", required=True, help="output directory (becomes a model directory)")
    parser.add_argument("--pooling", choices=POOLING_MODES, default=None, help="override the base's pooling")
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda if available)")
    parser.add_argument(
        "--max-pairs", type=positive_int, default=None, help="train on a random subset of N examples"
    )
    parser.add_argument(
        "--seed", type=non_negative_int, default=42, help="seed of shuffling and initialisation (default 42)"
    )
    parser.add_argument(
        "--epochs", type=positive_int, default=None, help="default: the recipe's (nli 1, stsb 4)"
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=16,
        help="examples per optimiser step, over all processes (default 16)",
    )
    parser.add_argument(
        "--lr", type=positive_float, help="peak learning rate (default 2e-5; 0.01 for a static model)"
    )
    parser.add_argument(
        "--warmup", type=unit_interval, default=0.1, help="warm-up share of the steps (default 0.1)"
    )
    parser.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="mixed precision: bf16 autocast on GPUs and CPUs with native bf16, fp16 with a gradient "
        "scaler on GPUs without it (default: off, exact fp32)",
    )
    parser.add_argument(
        "--eval-steps",
        type=non_negative_int,
        default=500,
        help="dev evaluation every N steps, 0: at epoch ends only",
    )
    parser.add_argument("--checkpoint-steps", type=positive_int, default=500, help="checkpoint every N steps")
    parser.add_argument("--resume", action="store_true", help="continue from OUTPUT/checkpoint")
    add_progress_arguments(parser, "on")
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
        type=positive_float,
        default=30.0,
        help="seconds to reach the other processes (default 30)",
    )
    ddp.add_argument(
        "--ddp-timeout",
        type=positive_float,
        default=1800.0,
        help="seconds a process waits for the others in one step, dev evaluations included (default 1800)",
    )


def _add_file_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train", required=True, help="training file: .csv, .tsv or .jsonl with a header")
    parser.add_argument(
        "--loss",
        choices=FILE_LOSSES,
        required=True,
        help="training objective (docs/guides/training.md: which loss for which data)",
    )
    parser.add_argument(
        "--format",
        choices=TRAINING_FORMATS,
        default="auto",
        help="training file format (default: by extension)",
    )
    parser.add_argument("--dev", default=None, help="scored dev pairs (sentence1, sentence2, score)")
    parser.add_argument(
        "--dev-retrieval",
        default=None,
        metavar="SET",
        help="keep the best NDCG@10 on a retrieval set instead: a BEIR folder (its dev qrels), scifact, "
        "nfcorpus (downloaded) or stsb-proxy / snli-proxy",
    )
    parser.add_argument(
        "--score-range",
        type=finite_float,
        nargs=2,
        default=(0.0, 5.0),
        metavar=("LOW", "HIGH"),
        help="default 0 5",
    )
    parser.add_argument("--labels", default=None, help="softmax: comma-separated label set (default: NLI's)")
    parser.add_argument("--distance", choices=TRIPLET_DISTANCES, default="euclidean", help="triplet loss")
    parser.add_argument("--margin", type=non_negative_float, default=1.0, help="triplet loss margin")
    parser.add_argument(
        "--mini-batch-size",
        type=positive_int,
        default=32,
        help="cached-mnrl: sentences embedded at once (default 32)",
    )
    parser.add_argument(
        "--matryoshka-dims",
        type=positive_int,
        nargs="+",
        default=None,
        metavar="D",
        help="also train the first D dimensions to work alone (MatryoshkaLoss), e.g. 384 256 128 64",
    )
    parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines (and count them)")


def _add_sparse_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--train",
        default=None,
        help="(anchor, positive[, negative]) .csv/.tsv/.jsonl (default: NLI triplets)",
    )
    parser.add_argument("--format", choices=TRAINING_FORMATS, default="auto", help="training file format")
    parser.add_argument(
        "--loss",
        choices=SPARSE_OBJECTIVES,
        default="splade",
        help="splade: in-batch negatives + FLOPS regularisation (default); sparse-mnrl: without it",
    )
    parser.add_argument(
        "--document-regularizer-weight",
        type=non_negative_float,
        default=3e-5,
        help="FLOPS weight of documents (default 3e-5)",
    )
    parser.add_argument(
        "--query-regularizer-weight",
        type=_weight_or_none,
        default=5e-5,
        help="FLOPS weight of queries (default 5e-5; none: not regularised, for a static query side)",
    )
    parser.add_argument(
        "--regularizer-warmup",
        type=unit_interval,
        default=1 / 3,
        help="share of the steps over which the FLOPS weights grow quadratically from 0 (default 1/3)",
    )
    parser.add_argument(
        "--dev-retrieval",
        default=None,
        metavar="SET",
        help="retrieval dev set: a BEIR folder (its dev qrels), scifact, nfcorpus or stsb-proxy (default) "
        "/ snli-proxy",
    )
    parser.add_argument(
        "--max-active-dims",
        type=positive_int,
        default=None,
        help="keep each vector's N largest weights (dev and model)",
    )
    parser.add_argument(
        "--static-lr",
        type=positive_float,
        default=1e-3,
        help="inference-free models: learning rate of the static query table (default 1e-3)",
    )
    parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines (and count them)")


def _weight_or_none(text: str) -> float | None:
    """``none``, or a finite weight of 0 or more (argparse names the option on a refusal)."""
    return None if text.lower() == "none" else non_negative_float(text)


def run(args: argparse.Namespace) -> int:
    from sbert.training import TrainingDivergedError
    from sbert.training.recipes import train_recipe

    config = recipe_config(args)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return _run_distributed(config, args)
    try:
        result = train_recipe(config)
    except TrainingDivergedError as error:
        print(f"sbert train: {error}", file=sys.stderr)
        return 1
    if result.interrupted:
        return 130
    _print_results(Path(config.output), config.recipe)
    return 0


def recipe_config(args: argparse.Namespace) -> RecipeConfig:
    """The library's description of the run the flags ask for."""
    from sbert.training.recipes import RecipeConfig

    file_options: dict[str, Any] = {}
    if args.recipe == "file":
        file_options = {
            "train_file": args.train,
            "loss": args.loss,
            "file_format": args.format,
            "dev_file": args.dev,
            "dev_retrieval": args.dev_retrieval,
            "score_range": tuple(args.score_range),
            "distance": args.distance,
            "margin": args.margin,
            "skip_bad_lines": args.skip_bad_lines,
            "mini_batch_size": args.mini_batch_size,
            "matryoshka_dimensions": tuple(args.matryoshka_dims or ()),
            **({"labels": args.labels.split(",")} if args.labels else {}),
        }
    if args.recipe == "sparse":
        file_options = {
            "train_file": args.train,
            "file_format": args.format,
            "dev_retrieval": args.dev_retrieval,
            "skip_bad_lines": args.skip_bad_lines,
            "sparse_loss": args.loss,
            "document_regularizer_weight": args.document_regularizer_weight,
            "query_regularizer_weight": args.query_regularizer_weight,
            "regularizer_warmup": args.regularizer_warmup,
            "max_active_dims": args.max_active_dims,
            "static_learning_rate": args.static_lr,
        }
    concatenation = getattr(args, "concatenation", None)
    return RecipeConfig(
        recipe=args.recipe,
        output=args.output,
        base=args.base,
        data_dir=args.data_dir,
        seed=args.seed,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        warmup=args.warmup,
        bf16=args.bf16,
        eval_steps=args.eval_steps,
        checkpoint_steps=args.checkpoint_steps,
        resume=args.resume,
        show_progress_bar=args.show_progress_bar is not False,
        pooling=args.pooling,
        device=args.device,
        max_pairs=args.max_pairs,
        gather=args.gather,
        nli_files=getattr(args, "nli_file", None) or (),
        concatenation=[part.strip() for part in concatenation.split(",")]
        if concatenation
        else PAPER_CONCATENATION,
        **file_options,
    )


def _run_distributed(config: RecipeConfig, args: argparse.Namespace) -> int:
    """One process of a ``torchrun`` launch: join the others, train, and report errors with the rank."""
    from sbert.base.distributed import (
        DistributedError,
        distributed_device,
        join_process_group,
        leave_process_group,
    )
    from sbert.training import TrainingDivergedError
    from sbert.training.recipes import train_recipe

    label = f"rank {os.environ.get('RANK', '?')} of {os.environ['WORLD_SIZE']}"
    if os.environ.get("RANK", "0") != "0":
        logging.getLogger("sbert").setLevel(logging.ERROR)  # rank 0 alone tells the story
    try:
        device = distributed_device(args.device)
        join_process_group(device, args.rendezvous_timeout, args.ddp_timeout)
        result = train_recipe(replace(config, device=str(device)))
        if result.interrupted:
            return 130
        if os.environ.get("RANK", "0") == "0":
            _print_results(Path(config.output), config.recipe)
        return 0
    except DistributedError as error:
        print(f"sbert train: {error}", file=sys.stderr)
    except (OSError, ValueError, TypeError, TrainingDivergedError) as error:
        print(f"sbert train: {label}: error: {error}", file=sys.stderr)
    finally:
        leave_process_group()
    return 1


def _print_results(output: Path, recipe: str) -> None:
    """One line per trained stage: where the model is and how it scored."""
    stages = [("nli", output / "nli"), ("stsb", output)] if recipe == "nli-stsb" else [(recipe, output)]
    for stage, folder in stages:
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        summary = ", ".join(
            f"{key} {value:.4f}" if "ndcg" in key else f"{key} {value:.2f}"
            for key, value in results.items()
            if ("spearman" in key or "ndcg" in key) and value
        )
        print(f"{stage}: model saved to {folder} ({summary})")
