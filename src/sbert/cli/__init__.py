"""The ``sbert`` command: one subcommand per module in this package."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from sbert import __version__
from sbert.cli import (
    cluster,
    demo,
    encode,
    evaluate,
    index,
    info,
    mine,
    reproduce,
    search,
    serve,
    similarity,
    train,
)

# Each module adds its subcommand with ``register(subparsers)`` and sets ``handler`` on its parser.
SUBCOMMANDS = [demo, encode, similarity, info, evaluate, train, index, search, mine, cluster, reproduce]
SUBCOMMANDS.append(serve)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sbert", description="Sentence-BERT sentence embeddings: encode, compare, evaluate, train."
    )
    parser.add_argument("--version", action="version", version=f"sbert {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 success, 1 bad input or failure, 2 usage)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except (OSError, ValueError, TypeError) as error:
        print(f"sbert {args.command}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"sbert {args.command}: interrupted", file=sys.stderr)
        return 130
