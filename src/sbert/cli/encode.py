"""``sbert encode``: sentences from a file or stdin → a .npy matrix or JSONL."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.cli.common import add_model_arguments, load_model
from sbert.data.texts import TEXT_FORMATS, read_texts
from sbert.files import atomic_path

if TYPE_CHECKING:
    import numpy as np


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "encode",
        help="embed sentences from a file or stdin",
        description="Embed one sentence per input row; writes .npy (a matrix in input order) or JSONL.",
    )
    parser.add_argument("input", help="text file (one sentence a line), .jsonl, .csv/.tsv, or - for stdin")
    parser.add_argument(
        "--output", "-o", default=None, help="OUT.npy or OUT.jsonl (default: JSONL to stdout)"
    )
    parser.add_argument(
        "--format", choices=TEXT_FORMATS, default="auto", help="input format (default: by extension)"
    )
    parser.add_argument(
        "--column", default="text", help="field holding the sentence in JSONL/CSV (default: text)"
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="cap on padded tokens per batch, to bound memory"
    )
    parser.add_argument("--normalize", action="store_true", help="unit-length vectors")
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    texts = read_texts(args.input, args.format, args.column)
    model = load_model(args)
    vectors = model.encode(
        texts, batch_size=args.batch_size, max_tokens=args.max_tokens, normalize=args.normalize
    )
    assert isinstance(vectors, np.ndarray)
    if args.output is None:
        _write_jsonl(sys.stdout, texts, vectors)
    elif Path(args.output).suffix == ".npy":
        with atomic_path(args.output) as tmp, tmp.open("wb") as handle:
            np.save(handle, vectors)
    elif Path(args.output).suffix in (".jsonl", ".json"):
        with atomic_path(args.output) as tmp, tmp.open("w", encoding="utf-8") as handle:
            _write_jsonl(handle, texts, vectors)
    else:
        raise ValueError(f"--output {args.output}: use a .npy or .jsonl file name")
    if args.output:
        print(f"wrote {len(texts)} embeddings of dimension {model.dim} to {args.output}", file=sys.stderr)
    return 0


def _write_jsonl(handle, texts: list[str], vectors: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    for index, (text, vector) in enumerate(zip(texts, vectors)):
        record = {"index": index, "text": text, "embedding": [round(float(x), 7) for x in vector]}
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
