"""``sbert encode``: sentences from a file or stdin → an embedding store (a directory), or for small
outputs a .npy matrix or JSONL.

Heavy packages (numpy, torch, pyarrow, ray) are imported inside :func:`run`, not here.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.base import json_text
from sbert.cli.common import (
    add_batch_size_argument,
    add_model_arguments,
    add_progress_arguments,
    add_prompt_arguments,
    load_model,
    positive_int,
)
from sbert.data.texts import TEXT_FORMATS
from sbert.encoder.hub import DEFAULT_MODEL

if TYPE_CHECKING:
    from sbert.encoder.cold_start import ColdRequest

FILE_SUFFIXES = (".npy", ".jsonl", ".json")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "encode",
        help="embed sentences from a file or stdin",
        description="Embed one sentence per input row. A directory output (DIR/) is an embedding store: "
        "Parquet shards and a manifest, streamed in bounded memory and resumable after a crash (run the "
        "same command again). OUT.npy (a matrix in input order) and OUT.jsonl hold small outputs in memory.",
    )
    parser.add_argument(
        "input", help="text file (one sentence a line), .jsonl, .csv/.tsv, .parquet, a URI, or - for stdin"
    )
    parser.add_argument(
        "--output", "-o", default=None, help="DIR/ (a store), OUT.npy or OUT.jsonl (default: JSONL to stdout)"
    )
    parser.add_argument(
        "--format", choices=TEXT_FORMATS, default="auto", help="input format (default: by extension)"
    )
    parser.add_argument(
        "--column", default="text", help="field holding the sentence in JSONL/CSV/Parquet (default: text)"
    )
    add_batch_size_argument(parser)
    parser.add_argument(
        "--max-tokens",
        type=positive_int,
        default=None,
        help="cap on padded tokens per batch, to bound memory",
    )
    parser.add_argument("--normalize", action="store_true", help="unit-length vectors")
    parser.add_argument(
        "--dimensions",
        type=positive_int,
        default=None,
        metavar="D",
        help="OUT.npy, OUT.jsonl: keep the first D dimensions, unit length again (a Matryoshka prefix; "
        "a store keeps whole vectors: cut them with `sbert index build --dimensions`)",
    )
    parser.add_argument(
        "--skip-bad-lines",
        action="store_true",
        help="skip malformed input lines (counted) instead of stopping",
    )
    store = parser.add_argument_group("embedding store (a directory --output)")
    store.add_argument(
        "--shard-size", type=positive_int, default=100_000, help="rows per Parquet shard (default 100000)"
    )
    store.add_argument(
        "--chunk-rows",
        type=positive_int,
        default=10_000,
        help="rows encoded (and length-sorted) together (default 10000)",
    )
    store.add_argument(
        "--dtype",
        choices=("float32", "float16", "int8"),
        default="float32",
        help="stored vector type; int8 ranges are calibrated on the first chunk (default float32)",
    )
    store.add_argument("--id-column", default=None, help="integer id field of JSONL/CSV/Parquet rows")
    store.add_argument("--no-texts", action="store_true", help="do not store the texts")
    store.add_argument("--overwrite", action="store_true", help="start again over an existing store")
    store.add_argument("--engine", choices=("local", "ray"), default="local", help="local or Ray Data")
    store.add_argument(
        "--address", default=None, help="ray: cluster address (default: $RAY_ADDRESS or local)"
    )
    store.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="ray: encoder actors (default: one per GPU for a CUDA model, else per CPU)",
    )
    add_model_arguments(parser)
    add_progress_arguments(parser, "on for 1000 sentences or more; a store: on")
    add_prompt_arguments(parser)
    parser.set_defaults(handler=run)


def output_kind(output: str | None) -> str:
    """``stdout``, ``npy``, ``jsonl`` or ``store``, checked before any work is done.

    Raises:
        ValueError: a file name with another extension.
    """
    if output is None:
        return "stdout"
    suffix = Path(output).suffix.lower()
    if suffix in FILE_SUFFIXES and not output.endswith("/"):
        return "npy" if suffix == ".npy" else "jsonl"
    if output.endswith("/") or "://" in output or os.path.isdir(output) or not suffix:
        return "store"
    raise ValueError(f"--output {output}: use DIR/ (an embedding store), OUT.npy or OUT.jsonl")


def check_writable(output: str) -> None:
    """Fail now, not after the encode, when the output file's folder cannot be written."""
    folder = Path(output).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"--output {output}: cannot write in {folder}")
    if Path(output).is_dir():
        raise IsADirectoryError(f"--output {output}: is a directory; an embedding store is written as DIR/")


def run(args: argparse.Namespace) -> int:
    kind = output_kind(args.output)
    if kind == "store" and args.dimensions is not None:
        raise ValueError(
            "--dimensions: a store keeps whole vectors; cut them when indexing (sbert index build --dimensions)"
        )
    if kind == "store":
        return _run_store(args)
    if kind == "stdout":
        return _encode(args, kind, None)
    from sbert.base.outputs import FILE, claim_output

    check_writable(args.output)
    with claim_output(args.output, FILE) as target:  # a link's target is written; the link stays
        return _encode(args, kind, target)


def _encode(args: argparse.Namespace, kind: str, target: Path | None) -> int:
    import numpy as np

    from sbert.base.files import atomic_path
    from sbert.data.texts import read_texts
    from sbert.embeddings.truncation import truncate_embeddings

    texts = read_texts(args.input, args.format, args.column, skip_bad_lines=args.skip_bad_lines)
    vectors = _encode_texts(args, texts)
    assert isinstance(vectors, np.ndarray)
    if args.dimensions is not None:
        vectors = truncate_embeddings(vectors, args.dimensions)
    if kind == "stdout":
        _write_jsonl(sys.stdout, texts, vectors)
        return 0
    assert target is not None
    with atomic_path(target) as tmp:
        if kind == "npy":
            with tmp.open("wb") as handle:
                np.save(handle, vectors)
        else:
            with tmp.open("w", encoding="utf-8") as handle:
                _write_jsonl(handle, texts, vectors)
    print(f"wrote {len(texts)} embeddings of dimension {vectors.shape[1]} to {args.output}", file=sys.stderr)
    return 0


def _encode_texts(args: argparse.Namespace, texts: list[str]) -> Any:
    """The vectors (n, D) of ``texts``: from the cached graph without building the PyTorch model
    where an earlier command left what that needs (:mod:`sbert.encoder.cold_start`), else by the
    model, which then leaves it for the next command."""
    from sbert.embeddings.truncation import check_dimensions
    from sbert.encoder import cold_start

    request = _cold_request(args, texts)
    pooled = None if request is None else cold_start.encode(request, texts)
    if pooled is not None:
        from sbert.encoder.output import EncodeOutput

        if args.dimensions is not None:
            check_dimensions(args.dimensions, pooled.shape[1], f"model {args.model or DEFAULT_MODEL}'s")
        return EncodeOutput(normalize=args.normalize).finish(pooled, False)  # as encode() finishes
    model = load_model(args)
    if args.dimensions is not None:
        check_dimensions(args.dimensions, model.dim, f"model {model.name}'s")  # before encoding
    vectors = model.encode(
        texts,
        batch_size=args.batch_size,
        max_tokens=args.max_tokens,
        normalize=args.normalize,
        prompt_name=args.prompt_name,
        prompt=args.prompt,
        show_progress_bar=args.show_progress_bar,
    )
    if request is not None:
        cold_start.record(model, request)
    if not texts:  # encode([]) answers (0,) as sentence-transformers does: the file keeps its width
        import numpy as np

        return np.zeros((0, model.dim), dtype=np.float32)
    return vectors


def _cold_request(args: argparse.Namespace, texts: list[str]) -> ColdRequest | None:
    """What :mod:`~sbert.encoder.cold_start` keys its entries on, or ``None`` where the command
    asks for what only the model does (a pooling or prompt of its own, calibration, a progress bar)."""
    from sbert.base.options import PROGRESS_BAR_MIN_SENTENCES
    from sbert.encoder.cold_start import ColdRequest
    from sbert.encoder.hub import resolve_model_path

    bar = args.show_progress_bar or (
        args.show_progress_bar is None and len(texts) >= PROGRESS_BAR_MIN_SENTENCES
    )
    asked = (args.pooling, args.prompt_name, args.prompt, getattr(args, "calibration", None))
    if not texts or bar or any(option is not None for option in asked) or args.device not in (None, "cpu"):
        return None
    try:
        path = resolve_model_path(args.model)
    except Exception:  # the full path reports it
        return None
    return ColdRequest(str(path), args.precision, args.backend, args.device, args.batch_size, args.max_tokens)


def _run_store(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from sbert.base.outputs import claim_output
    from sbert.store.manifest import STORE

    # the rule and the lock are for local paths; a URI is checked by existing_store alone
    with nullcontext() if "://" in args.output else claim_output(args.output, STORE):
        return _encode_store(args)


def _encode_store(args: argparse.Namespace) -> int:
    from sbert.store import CorpusOptions, encode_corpus
    from sbert.store.manifest import resolve_location
    from sbert.store.writer import existing_store

    existing_store(*resolve_location(args.output))  # refuses a folder of other files before loading a model
    model = load_model(args)
    options = CorpusOptions(
        fmt=args.format,
        column=args.column,
        id_column=args.id_column,
        shard_size=args.shard_size,
        chunk_rows=args.chunk_rows,
        batch_size=args.batch_size,
        max_tokens=args.max_tokens,
        normalize=args.normalize,
        dtype=args.dtype,
        store_texts=not args.no_texts,
        skip_bad_lines=args.skip_bad_lines,
        overwrite=args.overwrite,
        show_progress=args.show_progress_bar is not False,
        engine=args.engine,
        address=args.address,
        workers=args.workers,
        prompt_name=args.prompt_name,
        prompt=args.prompt,
    )
    store = encode_corpus(model, args.input, args.output, options)
    skipped = store.manifest.get("skipped_lines", 0)
    print(
        f"wrote {len(store)} embeddings of dimension {store.dim} ({store.dtype}) in {len(store.shards)} "
        f"shard(s) to {args.output}" + (f"; skipped {skipped} malformed line(s)" if skipped else ""),
        file=sys.stderr,
    )
    return 0


def _write_jsonl(handle, texts: list[str], vectors) -> None:  # type: ignore[no-untyped-def]
    for index, (text, vector) in enumerate(zip(texts, vectors)):
        record = {"index": index, "text": text, "embedding": [round(float(x), 7) for x in vector]}
        handle.write(json_text.dumps(record, ensure_ascii=False) + "\n")
