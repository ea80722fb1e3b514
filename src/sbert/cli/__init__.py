"""The ``sbert`` command: one subcommand per module in this package.

Start-up stays under a second: no module here imports torch, transformers, numpy or the other
heavy packages at module level; each handler imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence

from sbert._version import __version__
from sbert.cli import (
    cluster,
    data,
    demo,
    distill,
    encode,
    evaluate,
    index,
    info,
    mine,
    mine_negatives,
    reproduce,
    search,
    serve,
    similarity,
    train,
)
from sbert.cli.common import CommandParser, absolute_path
from sbert.data.paths import DATA_ENV

# Each module adds its subcommand with ``register(subparsers)`` and sets ``handler`` on its parser.
SUBCOMMANDS = [
    demo,
    encode,
    similarity,
    info,
    evaluate,
    train,
    distill,
    index,
    search,
    mine,
    mine_negatives,
    cluster,
    reproduce,
    data,
    serve,
]


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="sbert", description="Sentence-BERT sentence embeddings: encode, compare, evaluate, train."
    )
    parser.add_argument("--version", action="version", version=f"sbert {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    _add_verbose(subparsers)
    return parser


VERBOSE_HELP = "also show other libraries' messages (default: only sbert's)"


def _add_verbose(subparsers: argparse._SubParsersAction) -> None:
    """``-v`` after any subcommand too (``sbert index build ... -v``), not only before it."""
    for sub in set(subparsers.choices.values()):
        nested = [action for action in sub._actions if isinstance(action, argparse._SubParsersAction)]
        for action in nested:
            _add_verbose(action)
        if not nested and "--verbose" not in sub._option_string_actions:
            sub.add_argument(
                "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
            )


class _OnlySbert(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.name == "sbert" or record.name.startswith("sbert.")


@contextlib.contextmanager
def command_logging(verbose: bool) -> Iterator[None]:
    """The command's own logging: sbert's messages on stderr; everyone's with ``-v``.

    The library never configures logging; only this entry point does, and only while the command
    runs, so a program that calls :func:`main` gets its logging back.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s" if verbose else "%(message)s"))
    if not verbose:
        handler.addFilter(_OnlySbert())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 success, 1 bad input or failure, 2 usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if os.environ.get(DATA_ENV):  # made absolute once, like --data-dir (see common.absolute_path)
        os.environ[DATA_ENV] = absolute_path(os.environ[DATA_ENV])
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        with command_logging(args.verbose):
            return int(args.handler(args) or 0)
    except (OSError, ValueError, TypeError) as error:
        print(f"sbert {args.command}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"sbert {args.command}: interrupted", file=sys.stderr)
        return 130
