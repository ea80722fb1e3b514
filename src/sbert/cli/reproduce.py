"""``sbert reproduce``: the paper's tables on this machine, in one report beside the paper's figures.

The experiments are not part of the installed library: they live in the ``experiments/`` folder of a
checkout of the repository, found from ``SBERT_EXPERIMENTS`` (the checkout), the working directory
or one of its parents, or the checkout this sbert is installed from (``pip install -e``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from pathlib import Path
from types import ModuleType

from sbert.cli.common import add_data_argument
from sbert.data.paths import DATA_ENV, missing_data_message, resolve_data_dir

EXPERIMENTS_ENV = "SBERT_EXPERIMENTS"


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
    pipeline, scales = experiments_module("pipeline"), experiments_module("scale")
    scale = scales.QUICK if args.quick else scales.FULL
    output = args.output or f"reports/{scale.name}"
    if args.report_only:
        pipeline.render(output)
        print(f"report: {output}/{pipeline.REPORT_FILE}")
        return 0
    data_dir = resolve_data_dir(args.data_dir)
    if data_dir is None:
        raise ValueError(missing_data_message("no data directory"))
    command = _command(args, output)
    pipeline.reproduce(
        output, scale, str(data_dir), command, base=args.base, work_dir=args.work_dir, only=args.only
    )
    return 0


def _command(args: argparse.Namespace, output: str) -> str:
    """The command line that repeats this run, data directory included."""
    parts = ["sbert", "reproduce", *(["--quick"] if args.quick else []), "--output", output]
    parts += ["--base", args.base] if args.base else []
    parts += ["--only", *args.only] if args.only else []
    if args.data_dir:
        return shlex.join([*parts, "--data-dir", args.data_dir])
    return f"SBERT_DATA={shlex.quote(os.environ.get(DATA_ENV, ''))} {shlex.join(parts)}"


def experiments_module(name: str) -> ModuleType:
    """``experiments.<name>`` from the checkout :func:`find_checkout` finds, put first on the path.

    Raises:
        FileNotFoundError: no checkout with an ``experiments/`` folder (a wheel install), naming what to do.
    """
    checkout = find_checkout()
    if checkout is None:
        raise FileNotFoundError(
            "sbert reproduce runs the paper's experiments from a checkout of the sbert repository (its "
            f"experiments/ folder), and none was found from {Path.cwd()}: run it inside the checkout, or "
            f"set {EXPERIMENTS_ENV}=/path/to/the/checkout"
        )
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    return importlib.import_module(f"experiments.{name}")


def find_checkout() -> Path | None:
    """The folder holding ``experiments/pipeline.py``: ``$SBERT_EXPERIMENTS``, else the working
    directory or a parent of it, else the checkout of an editable install; None if none has it."""
    if os.environ.get(EXPERIMENTS_ENV):
        candidates = [Path(os.environ[EXPERIMENTS_ENV]).expanduser()]
    else:
        here = Path.cwd().resolve()
        candidates = [here, *here.parents, Path(__file__).resolve().parents[3]]  # src/sbert/cli/ -> root
    return next((path for path in candidates if (path / "experiments" / "pipeline.py").is_file()), None)
