"""``sbert info MODEL``: what a model is made of."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from sbert.base.options import PRECISIONS
from sbert.cli.common import add_model_arguments, load_model
from sbert.encoder.hub import resolve_model_path

if TYPE_CHECKING:
    from sbert.encoder.model import SentenceEncoder
    from sbert.encoder.prompts import Prompts


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("info", help="describe a model: layers, dimension, pooling, limits")
    parser.add_argument("model_name", nargs="?", default=None, help="model (default: the bundled model)")
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    args.model = args.model_name or args.model
    model = load_model(args)
    parameters = sum(p.numel() for p in model.parameters())
    lines = {
        "model": model.name,
        "path": str(resolve_model_path(args.model)),
        "architecture": describe_architecture(model),
        "parameters": f"{parameters / 1e6:.1f} M",
        "pipeline": " → ".join(
            [
                "Transformer" if hasattr(model, "transformer") else "StaticEmbedding",
                f"Pooling({model.pooling.mode}"
                + ("" if model.pooling.include_prompt else ", prompt left out")
                + ")",
                *(type(layer).__name__ for layer in model.layers),
            ]
        ),
        "dimension": str(model.dim),
        "max_seq_length": str(model.max_seq_length),
        "device": str(model.device),
        "precision": f"{model.precision} (asked: {model.requested_precision})",
        "backend": f"{model.backend} (asked: {model.requested_backend})",
        "cpu": model.plan.cpu.name,
        "fallbacks": "; ".join(model.plan.fallbacks) or "none",
        "prompts": describe_prompts(model.prompts),
    }
    for key, value in lines.items():
        print(f"{key + ':':<16}{value}")
    print("what runs when asked for (backend/precision):")
    sbert_logger = logging.getLogger("sbert")
    level = sbert_logger.level
    sbert_logger.setLevel(logging.ERROR)  # each fallback's warning is in the table already
    try:
        for backend in ("torch", "openvino"):
            for precision in PRECISIONS:
                print(f"  {backend + '/' + precision:<18}{describe_plan(model, precision, backend)}")
    finally:
        sbert_logger.setLevel(level)
    return 0


def describe_architecture(model: SentenceEncoder) -> str:
    """``bert, 6 layers, hidden 384``, or a static model's table size."""
    if model.is_static:  # a token table, no network
        rows, dim = getattr(model.input_module, "embedding").weight.shape  # noqa: B009 (a static table)
        return f"static, {rows} tokens × {dim}"
    config = model.transformer.model.config
    return f"{config.model_type}, {config.num_hidden_layers} layers, hidden {config.hidden_size}"


def describe_prompts(prompts: Prompts) -> str:
    """``query: 'query: ' (default), document: 'passage: '``, or ``none``."""
    named = [
        f"{name}: {text!r}" + (" (default)" if name == prompts.default_name else "")
        for name, text in prompts.named.items()
    ]
    return ", ".join(named) or "none"


def describe_plan(model: SentenceEncoder, precision: str, backend: str) -> str:
    """What ``encode()`` runs for that request, and why where it is not what was asked."""
    try:
        plan = model.plan_for(precision, backend)
    except (ValueError, ImportError) as error:
        return f"refused: {error}"
    ran = f"{plan.backend}/{plan.precision}" + (", packs" if plan.packs else "")
    return ran + (f" ({'; '.join(plan.fallbacks)})" if plan.fallbacks else "")
