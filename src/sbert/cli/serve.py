"""``sbert serve``: embeddings, similarity, search and rerank over HTTP (needs the ``serve`` extra)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from sbert.cli.common import (
    DEFAULT_MODEL,
    add_model_arguments,
    int_in,
    load_model,
    non_negative_float,
    positive_int,
)
from sbert.server.settings import BatchSettings, Limits, ServeOptions, check_served_names, default

API_KEY_ENV = "SBERT_API_KEY"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve embeddings, similarity, search and rerank over HTTP",
        description="An OpenAI-compatible /v1/embeddings (also /embeddings) plus /similarity, /search, "
        "/rerank, /health, /v1/models and /metrics, text-embeddings-inference's /, /invocations, "
        "/embed, /embed_sparse (a SPLADE model), /embed_all, /tokenize, /decode, /info and /ping, an "
        "OpenAPI document at /openapi.json "
        "and Swagger UI at /docs; concurrent requests are batched together on one thread per model.",
    )
    _add_server_arguments(parser)
    _add_batching_arguments(parser)
    parser.add_argument(
        "--log-level",
        default=ServeOptions.log_level,
        choices=["debug", "info", "warning", "error"],
        help=f"the HTTP server's log level (default {ServeOptions.log_level})",
    )
    add_model_arguments(parser, several=True)
    parser.set_defaults(handler=run)


def _add_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default=ServeOptions.host, help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--port",
        type=int_in(0, 65535),
        default=ServeOptions.port,
        help=f"TCP port to listen on (default {ServeOptions.port})",
    )
    parser.add_argument("--index", default=None, help="index directory from `sbert index build`, for /search")
    parser.add_argument(
        "--cross-encoder",
        default=None,
        help="saved cross-encoder directory for /rerank (default: the bi-encoder)",
    )
    parser.add_argument(
        "--api-key",
        default=None,
        help=f"require 'Authorization: Bearer KEY' (default: ${API_KEY_ENV} if set, else no key)",
    )
    parser.add_argument(
        "--served-model-name",
        default=[],
        action="append",
        metavar="[MODEL=]NAME",
        help="a name requests may give a model (e.g. text-embedding-3-small); repeat it for more. "
        "NAME alone names the first model, MODEL=NAME the one served as MODEL. Answers give the "
        "model's --model NAME, else its first served name, else its own name; a model is "
        "addressed by these names only",
    )
    parser.add_argument(
        "--kind",
        choices=["auto", "dense", "sparse"],
        default="auto",
        help="the kind of every --model: sparse serves /embed_sparse (SPLADE), dense /v1/embeddings "
        "and /embed. auto (default): sparse for a folder saved as a sparse encoder (model_type "
        "SparseEncoder, or SPLADE modules in modules.json), else dense; a plain *ForMaskedLM folder "
        "needs --kind sparse",
    )
    parser.add_argument(
        "--max-concurrent-requests",
        type=positive_int,
        default=ServeOptions.max_concurrent_requests,
        help="requests in flight before 429 (default %(default)s)",
    )
    parser.add_argument(
        "--max-items",
        type=positive_int,
        default=Limits.max_items,
        help="items of one request before 413 (default %(default)s)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=Limits.max_body_bytes,
        help="request body size before 413 (default %(default)s)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=non_negative_float,
        default=ServeOptions.drain_timeout,
        help="seconds SIGTERM waits for requests in flight (default %(default)s)",
    )
    parser.add_argument(
        "--engine-process",
        action="store_true",
        help="run the model's forward passes in a process of their own, apart from HTTP, JSON and "
        "tokenizing (the model is loaded twice; a dense transformer model only)",
    )


def _add_batching_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-queued-items",
        type=positive_int,
        default=default(BatchSettings, "max_queued_items"),
        help="sentences waiting for the model before 429 (default %(default)s)",
    )
    parser.add_argument(
        "--max-batch-tokens",
        type=positive_int,
        default=None,
        help="tokens per batch (default: 8192 padded tokens on a CPU; on a GPU 16384 real tokens, "
        "text-embeddings-inference's max_batch_tokens)",
    )
    parser.add_argument(
        "--max-batch-size",
        type=positive_int,
        default=default(BatchSettings, "max_batch_size"),
        help="sentences per forward pass (default %(default)s)",
    )
    parser.add_argument(
        "--no-pack",
        dest="pack",
        action="store_false",
        help="run merged batches padded, not packed into rows (packing needs BERT on OpenVINO, float32/bf16)",
    )
    parser.add_argument(
        "--batch-wait-ms",
        type=non_negative_float,
        default=default(BatchSettings, "batch_wait_ms"),
        help=(
            "the most a batch waits under load for the clients just answered (default %(default)s: "
            "never; the next batch is whatever is queued when the model is free)"
        ),
    )


def run(args: argparse.Namespace) -> int:
    try:
        from sbert.server.run import serve
    except ImportError as error:
        raise ImportError(
            f'{error}; sbert serve needs the serve extra: pip install "sbert[serve]"'
        ) from error
    check_served_names(args.served_model_name)  # before a model is loaded
    from sbert.server.serving_plan import check_device  # sbert.base.batching imports numpy: not for --help

    check_device(args.device)
    batching = BatchSettings(
        max_batch_tokens=args.max_batch_tokens,
        max_batch_size=args.max_batch_size,
        max_queued_items=args.max_queued_items,
        batch_wait_ms=args.batch_wait_ms,
        pack=args.pack,
    )
    from sbert.server.sparse_served import served  # a SPLADE model wrapped for the server

    loaders = model_loaders(args)
    models = {name: served(load()) for name, load in loaders.items()}
    (first, model), *more = models.items()
    options = ServeOptions(
        host=args.host,
        port=args.port,
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        index=args.index,
        cross_encoder=args.cross_encoder,
        max_concurrent_requests=args.max_concurrent_requests,
        batching=batching,
        limits=Limits(max_body_bytes=args.max_body_bytes, max_items=args.max_items),
        drain_timeout=args.drain_timeout,
        log_level=args.log_level,
        engine_process=args.engine_process,
    )
    names = {  # a model given by path alone, not renamed: its own name's last part
        name: each or [Path(str(models[name].name)).name]
        for name, each in served_names(args.model, list(models), args.served_model_name).items()
    }
    print(
        f"sbert serve: {_described(names[first], model, _plan(model, args))} on http://{args.host}:{args.port}",
        file=sys.stderr,
        flush=True,
    )
    for name, other in more:
        print(f"sbert serve: also {_described(names[name], other, _plan(other, args))}", file=sys.stderr)
    return serve(
        [(names[name], each) for name, each in models.items()], options, [loaders[name] for name in models]
    )


def _described(names: list[str], model: Any, plan: str) -> str:
    """``NAME = ALIAS: MODEL (plan)``; the model once when it goes by its own name."""
    shown = " = ".join(names)
    if str(model.name) not in names:
        shown += f": {model.name}"
    return f"{shown} ({plan})"


def _plan(model: Any, args: argparse.Namespace) -> str:
    """Where and how ``model`` serves: device, precision, runner, batches (its ServingPlan)."""
    from sbert.server.serving_plan import ServingPlan, default_batch_tokens

    tokens = args.max_batch_tokens or default_batch_tokens(model)
    return ServingPlan.of(model, tokens, args.pack).line()


def model_loaders(args: argparse.Namespace) -> dict[str, Callable[[], Any]]:
    """How to load every ``--model``, by its name (``NAME=PATH``, else the path's last part): a
    picklable function each, which ``--engine-process`` runs again in the engine's process."""
    loaders: dict[str, Callable[[], Any]] = {}
    for spec in args.model or [None]:
        name, path = model_spec(spec)
        if name in loaders:
            raise ValueError(f"--model: two models named {name!r}; give each its own name (NAME=PATH)")
        loaders[name] = partial(load_served_model, argparse.Namespace(**{**vars(args), "model": path}))
    return loaders


def load_served_model(args: argparse.Namespace) -> Any:
    """``--model`` as ``--kind`` says: a :class:`~sbert.SparseEncoder`, or the dense model ``load_model``
    loads (``auto``: sparse for a local folder saved as a sparse encoder,
    :func:`sbert.sparse.format.is_sparse_folder`)."""
    from sbert.sparse.format import is_sparse_folder

    kind = getattr(args, "kind", "auto")
    folder = Path(args.model).expanduser() if args.model else None
    saved_sparse = folder is not None and folder.is_dir() and is_sparse_folder(folder)
    if kind == "dense" or (kind == "auto" and not saved_sparse):
        return load_model(args)
    if args.pooling is not None:
        raise ValueError(f"--pooling {args.pooling}: a sparse model pools as its SpladePooling says")
    from sbert.sparse.model import SparseEncoder

    return SparseEncoder.from_pretrained(
        args.model, device=args.device, precision=args.precision, backend=args.backend
    )


def served_names(specs: list[str] | None, models: list[str], given: list[str]) -> dict[str, list[str]]:
    """Each model's served names, the one answers give first: its ``--model NAME``, then its
    ``--served-model-name`` names (none for a model given by path alone and not renamed: it goes
    by its own name).

    Examples:
        >>> served_names(["mini=m/minilm", "cls=m/cls"], ["mini", "cls"], ["text-embedding-3-small"])
        {'mini': ['mini', 'text-embedding-3-small'], 'cls': ['cls']}
        >>> served_names(["m/minilm"], ["minilm"], ["tiny", "minilm=small"])
        {'minilm': ['tiny', 'small']}
        >>> served_names(None, ["all-MiniLM-L6-v2"], [])
        {'all-MiniLM-L6-v2': []}
    """
    named = {model_spec(spec)[0] for spec in specs or [] if "=" in spec}
    names: dict[str, list[str]] = {model: [] for model in models}
    for entry in given:
        model, _, name = entry.rpartition("=")
        if model and model not in names:
            raise ValueError(
                f"--served-model-name {entry}: no model is named {model!r} (models: {', '.join(names)})"
            )
        names[model or models[0]].append(name)
    for model, each in names.items():
        if model in named:
            each.insert(0, model)
    return {model: list(dict.fromkeys(each)) for model, each in names.items()}


def model_spec(spec: str | None) -> tuple[str, str | None]:
    """``NAME=PATH`` or ``PATH`` (named after its last part) to ``(name, path)``.

    Examples:
        >>> model_spec("small=models/minilm"), model_spec("models/minilm/")
        (('small', 'models/minilm'), ('minilm', 'models/minilm/'))
    """
    if spec is None:
        return DEFAULT_MODEL, None
    name, _, path = spec.partition("=") if "=" in spec else ("", "", spec)
    return name or Path(path.rstrip("/")).name or path, path
