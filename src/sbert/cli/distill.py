"""``sbert distill static``: a static model (one vector per token, averaged) distilled from a model."""

from __future__ import annotations

import argparse
import sys

from sbert.cli.common import non_negative_int, positive_float, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "distill",
        help="distil a faster model from a model",
        description="Distil a faster model from a model.",
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    static = kinds.add_parser(
        "static",
        help="a static model: one vector per token, averaged (no transformer at inference)",
        description="Every vocabulary token through the teacher, PCA, frequency weights; with --corpus, "
        "the table is then fitted so that a sentence's mean token vector matches the teacher's vector.",
    )
    static.add_argument(
        "--teacher", default=None, help="model to distil (default: the bundled all-MiniLM-L6-v2)"
    )
    static.add_argument("--output", "-o", required=True, help="directory to write the static model to")
    static.add_argument(
        "--dimensions", type=positive_int, default=256, help="token vector size (default 256)"
    )
    static.add_argument(
        "--corpus", nargs="+", default=[], metavar="FILE", help="text files to fit the table on (optional)"
    )
    static.add_argument("--epochs", type=positive_int, default=5, help="passes over the corpus (default 5)")
    static.add_argument(
        "--batch-size", type=positive_int, default=256, help="sentences per step (default 256)"
    )
    static.add_argument(
        "--learning-rate", type=positive_float, default=0.01, help="SparseAdam's step size (default 0.01)"
    )
    static.add_argument("--seed", type=non_negative_int, default=0, help="shuffling seed (default 0)")
    static.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sbert.base.outputs import MODEL, claim_output

    with claim_output(args.output, MODEL):  # refused or locked before torch loads (seconds)
        from sbert.static.fit import FitConfig
        from sbert.static.pipeline import distill_static

        config = FitConfig(args.epochs, args.batch_size, args.learning_rate, args.seed)
        model = distill_static(args.teacher, args.output, args.dimensions, args.corpus, config)
    print(f"static model ({model.dim}-d) written to {args.output}", file=sys.stderr)
    return 0
