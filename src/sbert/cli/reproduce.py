"""``sbert reproduce``: the paper's tables on this machine, in one report beside the paper's figures."""

from __future__ import annotations

import argparse
import os
import shlex

from sbert.cli.common import add_data_argument
from sbert.data.paths import DATA_ENV, missing_data_message, resolve_data_dir
from sbert.reproduce.scale import FULL, QUICK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        help="run the paper's experiments and write a report with our numbers beside the paper's",
        description="Reproduce the paper's Tables 1, 2, 5, 6 and 7 and its cost argument at the scale "
        "this machine allows. Results are cached per experiment: a re-run does only what is missing.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="subsample everything: 14 minutes on 2 cores (full: 82 minutes)",
    )
    parser.add_argument(
        "--output", "-o", default=None, help="report folder (default: reports/full or reports/quick)"
    )
    parser.add_argument("--work-dir", default=None, help="cache and trained models (default: OUTPUT/.work)")
    parser.add_argument(
        "--base", default=None, help="model to start from (default: the bundled all-MiniLM-L6-v2)"
    )
    parser.add_argument(
        "--only", nargs="+", default=(), metavar="PREFIX", help="run only cells whose id starts with PREFIX"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild REPORT.md and the charts from OUTPUT/results.json, running nothing",
    )
    add_data_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sbert.reproduce.pipeline import REPORT_FILE, render, reproduce

    scale = QUICK if args.quick else FULL
    output = args.output or f"reports/{scale.name}"
    if args.report_only:
        render(output)
        print(f"report: {output}/{REPORT_FILE}")
        return 0
    data_dir = resolve_data_dir(args.data_dir)
    if data_dir is None:
        raise ValueError(missing_data_message("no data directory"))
    command = _command(args, output)
    reproduce(output, scale, str(data_dir), command, base=args.base, work_dir=args.work_dir, only=args.only)
    return 0


def _command(args: argparse.Namespace, output: str) -> str:
    """The command line that repeats this run, data directory included."""
    parts = ["sbert", "reproduce", *(["--quick"] if args.quick else []), "--output", output]
    parts += ["--base", args.base] if args.base else []
    parts += ["--only", *args.only] if args.only else []
    if args.data_dir:
        return shlex.join([*parts, "--data-dir", args.data_dir])
    return f"SBERT_DATA={shlex.quote(os.environ.get(DATA_ENV, ''))} {shlex.join(parts)}"
