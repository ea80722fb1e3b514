"""``sbert mine FILE``: the most similar pairs of sentences in a file (paraphrase mining)."""

from __future__ import annotations

import argparse
import sys

from sbert.base import json_text
from sbert.cli.common import (
    add_batch_size_argument,
    add_model_arguments,
    finite_float,
    load_model,
    positive_int,
)
from sbert.cli.index import add_text_arguments
from sbert.data.texts import read_texts


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mine",
        help="most similar sentence pairs in a file",
        description="Paraphrase mining: best pairs first.",
    )
    parser.add_argument("input", help="text file (one sentence a line), .jsonl, .csv/.tsv, or - for stdin")
    parser.add_argument(
        "--top-k", type=positive_int, default=100, help="neighbours kept per sentence (default 100)"
    )
    parser.add_argument("--max-pairs", type=positive_int, default=20, help="pairs printed (default 20)")
    parser.add_argument(
        "--min-score", type=finite_float, default=None, help="drop pairs below this cosine similarity"
    )
    parser.add_argument("--json", action="store_true", help="one JSON line per pair")
    add_batch_size_argument(parser)
    add_text_arguments(parser)
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sbert.applications.mining import paraphrase_mining

    texts = read_texts(args.input, args.format, args.column)
    model = load_model(args)
    pairs = paraphrase_mining(
        texts, model, top_k=args.top_k, max_pairs=args.max_pairs, batch_size=args.batch_size
    )
    if args.min_score is not None:
        pairs = [pair for pair in pairs if pair.score >= args.min_score]
    for pair in pairs:
        if args.json:
            record = {
                "score": pair.score,
                "i": pair.i,
                "j": pair.j,
                "text_i": texts[pair.i],
                "text_j": texts[pair.j],
            }
            print(json_text.dumps(record, ensure_ascii=False))
        else:
            print(f"{pair.score:.3f}  [{pair.i}] {texts[pair.i]}  <->  [{pair.j}] {texts[pair.j]}")
    print(f"{len(pairs)} pairs from {len(texts)} sentences", file=sys.stderr)
    return 0
