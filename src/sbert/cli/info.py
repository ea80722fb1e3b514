"""``sbert info MODEL``: what a model is made of."""

from __future__ import annotations

import argparse

from sbert.cli.common import add_model_arguments, load_model
from sbert.hub import resolve_model_path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("info", help="describe a model: layers, dimension, pooling, limits")
    parser.add_argument("model_name", nargs="?", default=None, help="model (default: the bundled model)")
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    args.model = args.model_name or args.model
    model = load_model(args)
    config = model.transformer.model.config
    parameters = sum(p.numel() for p in model.parameters())
    lines = {
        "model": model.name,
        "path": str(resolve_model_path(args.model)),
        "architecture": f"{config.model_type}, {config.num_hidden_layers} layers, hidden {config.hidden_size}",
        "parameters": f"{parameters / 1e6:.1f} M",
        "pipeline": " → ".join(
            [
                "Transformer",
                f"Pooling({model.pooling.mode})",
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
    }
    for key, value in lines.items():
        print(f"{key + ':':<16}{value}")
    return 0
