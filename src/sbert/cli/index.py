"""``sbert index build --corpus FILE --output DIR``: embed a corpus and save a FAISS index of it."""

from __future__ import annotations

import argparse
import sys
import time

from sbert.cli.common import add_model_arguments, load_model
from sbert.data.texts import TEXT_FORMATS, read_texts


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("index", help="build a vector index of a corpus (FAISS)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="embed a corpus file and save an index directory",
        description="Embed one sentence per input row and save a FAISS index with the texts and a manifest.",
    )
    build.add_argument("--corpus", required=True, help="text file (one sentence a line), .jsonl or .csv/.tsv")
    build.add_argument("--output", "-o", required=True, help="index directory to write (replaced atomically)")
    build.add_argument(
        "--kind",
        choices=("auto", "flat", "hnsw", "ivf"),
        default="auto",
        help="flat (exact), hnsw or ivf; auto: flat up to 100k sentences, hnsw up to 5M, then ivf",
    )
    add_text_arguments(build)
    build.add_argument("--batch-size", type=int, default=32)
    add_model_arguments(build)
    build.set_defaults(handler=run_build)


def add_text_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=TEXT_FORMATS, default="auto", help="input format (default: by extension)"
    )
    parser.add_argument(
        "--column", default="text", help="field holding the sentence in JSONL/CSV (default: text)"
    )


def run_build(args: argparse.Namespace) -> int:
    from sbert.applications.index import VectorIndex
    from sbert.encoder import PROGRESS_BAR_MIN_SENTENCES

    start = time.perf_counter()
    texts = read_texts(args.corpus, args.format, args.column)
    if not texts:
        raise ValueError(f"{args.corpus}: no sentences to index")
    model = load_model(args)
    long_input = len(texts) >= PROGRESS_BAR_MIN_SENTENCES  # a bar for 21 sentences is noise
    vectors = model.encode(texts, batch_size=args.batch_size, show_progress_bar=long_input)
    index = VectorIndex.build(
        vectors, texts=texts, kind=args.kind, model_name=model.name, show_progress_bar=long_input
    )
    index.save(args.output)
    print(
        f"indexed {len(index)} sentences ({index.kind}, {index.dim}-d, model {model.name}) into {args.output} "
        f"in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    return 0
