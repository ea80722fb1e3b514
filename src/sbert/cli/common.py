"""Arguments and helpers that several subcommands share.

Nothing here imports torch: ``register()`` only builds argparse, so ``sbert --help`` stays fast.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from sbert.base.options import BACKENDS, POOLING_MODES, PRECISIONS
from sbert.data.paths import DATA_ENV, default_data_dir
from sbert.encoder.hub import DEFAULT_MODEL

if TYPE_CHECKING:
    from sbert.encoder.model import SentenceEncoder


class CommandParser(argparse.ArgumentParser):
    """argparse's parser; one made with ``intermixed=True`` also takes its positionals after or
    between its options (``sbert evaluate --model M retrieval stsb-proxy`` as well as ``sbert evaluate
    retrieval stsb-proxy --model M``).

    Plain argparse gives a second, optional positional (``retrieval``'s set) nothing when an option
    separates it from the first, and then refuses it as an unrecognized argument. An option that takes
    several values (``--dimensions 256 128``) still takes every word after it: put it last or before
    another option.

    Examples:
        >>> parser = CommandParser(prog="demo", intermixed=True)
        >>> _ = parser.add_argument("suite")
        >>> _ = parser.add_argument("dataset", nargs="?")
        >>> _ = parser.add_argument("--model")
        >>> args = parser.parse_args(["retrieval", "--model", "m", "stsb-proxy"])
        >>> args.suite, args.dataset, args.model
        ('retrieval', 'stsb-proxy', 'm')
    """

    def __init__(self, *args: Any, intermixed: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.intermixed = intermixed
        self._intermixing = False

    def parse_known_args(
        self, args: Iterable[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        # Python 3.10-3.12's intermixed parsing calls parse_known_args itself, twice: those calls
        # must parse plainly.
        if not self.intermixed or self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(None if args is None else list(args), namespace)
        finally:
            self._intermixing = False


def add_model_arguments(
    parser: argparse.ArgumentParser, precision: str = "auto", several: bool = False
) -> None:
    """``--model``, ``--pooling``, ``--device``, ``--precision`` (default ``precision``), ``--backend``, ``--calibration``.

    ``several``: ``--model`` may be repeated (a list; ``sbert serve``), each optionally ``NAME=PATH``.
    """
    model_help = (
        f"model directory, hub id (org/name) or {DEFAULT_MODEL!r} (default: the bundled {DEFAULT_MODEL})"
    )
    if several:
        model_help += "; repeat it to serve several, each as NAME=PATH (the first is the default)"
    parser.add_argument(
        "--model", "-m", default=None, action="append" if several else "store", help=model_help
    )
    parser.add_argument("--pooling", choices=POOLING_MODES, default=None, help="override the model's pooling")
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda if available)")
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=precision,
        help=f"inference precision (default {precision}; auto: bf16 where the CPU has it natively, else float32; "
        "never a calibrated one. mixed (int8/bf16) and int8 need the openvino extra and calibrate "
        "once per machine)",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="inference engine (default auto: OpenVINO on CPU when the openvino extra is installed)",
    )
    parser.add_argument(
        "--calibration",
        default=None,
        help="mixed, int8: text file of calibration sentences, one per line (default: the bundled set)",
    )


def add_prompt_arguments(
    parser: argparse.ArgumentParser, default: str = "the model's default prompt"
) -> None:
    """``--prompt-name`` and ``--prompt``: the text put before every sentence (``encode(prompt_name=..., prompt=...)``)."""
    parser.add_argument(
        "--prompt-name", default=None, help=f"one of the model's prompts by name (default: {default})"
    )
    parser.add_argument(
        "--prompt", default=None, help="this text before every sentence, instead of a named prompt"
    )


def add_batch_size_argument(parser: argparse.ArgumentParser) -> None:
    """``--batch-size``: sentences per forward pass (``encode(batch_size=...)``), default 32 as there."""
    parser.add_argument(
        "--batch-size", type=positive_int, default=32, help="sentences per forward pass (default 32)"
    )


def add_progress_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    """``--show-progress-bar`` (sentence-transformers' ``show_progress_bar``) and ``--no-progress``:
    ``args.show_progress_bar`` is True, False, or None when neither is given."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--show-progress-bar",
        dest="show_progress_bar",
        action="store_const",
        const=True,
        default=None,
        help=f"show a progress bar (default: {default})",
    )
    group.add_argument(
        "--no-progress", dest="show_progress_bar", action="store_const", const=False, help="no progress bar"
    )


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        default=None,
        type=absolute_path,
        help=f"folder with the evaluation data (default: ${DATA_ENV}, else {default_data_dir()}; "
        "fill it with: sbert data download)",
    )


def absolute_path(value: str) -> str:
    """A path as given on the command line, made absolute once, here: a relative ``../data`` then
    means the same folder to every part of the run, whatever the working directory later."""
    return os.path.abspath(os.path.expanduser(value))


def load_model(args: argparse.Namespace) -> SentenceEncoder:
    from sbert.data.texts import read_texts
    from sbert.encoder.model import SentenceEncoder

    calibration = getattr(args, "calibration", None)
    return SentenceEncoder.from_pretrained(
        args.model,
        pooling=args.pooling,
        device=args.device,
        precision=getattr(args, "precision", "auto"),
        backend=getattr(args, "backend", "auto"),
        calibration_sentences=read_texts(calibration) if calibration else None,
    )


def int_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type=``: a whole number from ``low`` (to ``high``), else a message with the range.

    Examples:
        >>> positive_int("3")
        3
        >>> positive_int("-5")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a whole number of at least 1, got '-5'
        >>> int_in(0, 65535)("70000")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a whole number from 0 to 65535, got '70000'
    """
    wanted = f"from {low} to {high}" if high is not None else f"of at least {low}"

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = low - 1  # not a whole number: the same message
        if number < low or (high is not None and number > high):
            raise argparse.ArgumentTypeError(f"expected a whole number {wanted}, got {value!r}")
        return number

    parse.__name__ = "int_in"
    return parse


def float_in(
    low: float = -math.inf, high: float = math.inf, *, above: bool = False
) -> Callable[[str], float]:
    """An argparse ``type=``: a finite number from ``low`` to ``high`` (``above``: more than ``low``),
    else a message with the range; NaN and infinities are always refused.

    Examples:
        >>> unit_interval("0.25")
        0.25
        >>> finite_float("nan")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a finite number, got 'nan'
        >>> non_negative_float("-1")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a finite number of at least 0, got '-1'
    """
    wanted = _range_words(low, high, above)

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        below = number <= low if above else number < low
        if not math.isfinite(number) or below or number > high:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {value!r}")
        return number

    parse.__name__ = "float_in"
    return parse


def _range_words(low: float, high: float, above: bool) -> str:
    words = "a finite number"
    bound = f"{low:g}"
    if math.isfinite(low) and math.isfinite(high):
        return (
            f"{words} {'above ' + bound if above else 'from ' + bound} {'up to' if above else 'to'} {high:g}"
        )
    if math.isfinite(low):
        return f"{words} {'above' if above else 'of at least'} {bound}"
    if math.isfinite(high):
        return f"{words} of at most {high:g}"
    return words


positive_int = int_in(1)
non_negative_int = int_in(0)
finite_float = float_in()
non_negative_float = float_in(0.0)
positive_float = float_in(0.0, above=True)
unit_interval = float_in(0.0, 1.0)
