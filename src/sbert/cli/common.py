"""Arguments and helpers that several subcommands share."""

from __future__ import annotations

import argparse

from sbert.data.texts import read_texts
from sbert.encoder import SentenceEncoder
from sbert.hub import DEFAULT_MODEL
from sbert.inference import PRECISIONS
from sbert.inference.precision import BACKENDS
from sbert.modules.pooling import POOLING_MODES


def add_model_arguments(parser: argparse.ArgumentParser, precision: str = "auto") -> None:
    """``--model``, ``--pooling``, ``--device``, ``--precision`` (default ``precision``), ``--backend``, ``--calibration``."""
    parser.add_argument(
        "--model",
        "-m",
        default=None,
        help=f"model directory, hub id (org/name) or {DEFAULT_MODEL!r} (default: the bundled {DEFAULT_MODEL})",
    )
    parser.add_argument("--pooling", choices=POOLING_MODES, default=None, help="override the model's pooling")
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda if available)")
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=precision,
        help=f"inference precision (default {precision}; auto: mixed int8/bf16 with the openvino extra on "
        "CPUs with native bf16 and int8, else bf16 where the CPU has it natively, else float32; mixed "
        "and int8 need the openvino extra)",
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


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", default=None, help="folder with the evaluation data (default: $SBERT_DATA)"
    )


def load_model(args: argparse.Namespace) -> SentenceEncoder:
    calibration = getattr(args, "calibration", None)
    return SentenceEncoder.from_pretrained(
        args.model,
        pooling=args.pooling,
        device=args.device,
        precision=getattr(args, "precision", "auto"),
        backend=getattr(args, "backend", "auto"),
        calibration_sentences=read_texts(calibration) if calibration else None,
    )
