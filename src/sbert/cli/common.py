"""Arguments and helpers that several subcommands share.

Nothing here imports torch: ``register()`` only builds argparse, so ``sbert --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from sbert.data.paths import DATA_ENV, default_data_dir
from sbert.hub import DEFAULT_MODEL
from sbert.options import BACKENDS, POOLING_MODES, PRECISIONS

if TYPE_CHECKING:
    from sbert.encoder import SentenceEncoder


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
    from sbert.encoder import SentenceEncoder

    calibration = getattr(args, "calibration", None)
    return SentenceEncoder.from_pretrained(
        args.model,
        pooling=args.pooling,
        device=args.device,
        precision=getattr(args, "precision", "auto"),
        backend=getattr(args, "backend", "auto"),
        calibration_sentences=read_texts(calibration) if calibration else None,
    )
