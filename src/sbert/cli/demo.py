"""``sbert demo``: the main job on the bundled model, in one command.

Embeds a small corpus written for the project, prints a similarity table, the nearest corpus
sentences for a few queries and, when the data directory is present, the STSb test Spearman.
"""

from __future__ import annotations

import argparse
import time
from importlib import resources

import numpy as np

from sbert.cli.common import add_data_argument, add_model_arguments, load_model
from sbert.cli.similarity import format_matrix
from sbert.data import read_stsb, resolve_data_dir
from sbert.encoder import SentenceEncoder
from sbert.evaluation import SimilarityEvaluator
from sbert.similarity import cosine_matrix

QUERIES = [
    "Someone is making music.",
    "A spacecraft was sent into space.",
    "The software had a defect.",
    "Prices keep going up.",
]
TABLE_SENTENCES = [
    "A man is playing a guitar.",
    "Someone is playing an instrument.",
    "A chef is cooking a meal.",
    "The rocket flew to the moon.",
    "A person plays music.",
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="embed, compare and search a small corpus (the main job)")
    parser.add_argument("--top-k", type=int, default=3, help="nearest sentences shown per query")
    add_model_arguments(parser)
    add_data_argument(parser)
    parser.set_defaults(handler=run)


def demo_corpus() -> list[str]:
    text = resources.files("sbert").joinpath("resources/demo_corpus.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    model = load_model(args)
    print(f"model: {model.name} ({model.dim}-d, {model.pooling.mode} pooling, {model.device})\n")

    print("Cosine similarity")
    vectors = model.encode(TABLE_SENTENCES)
    print(format_matrix(TABLE_SENTENCES, cosine_matrix(vectors, vectors).numpy()), "\n")

    corpus = demo_corpus()
    corpus_vectors = model.encode(corpus)
    scores = cosine_matrix(model.encode(QUERIES), corpus_vectors).numpy()  # (queries, corpus)
    print(f"Semantic search over {len(corpus)} corpus sentences")
    for query, row in zip(QUERIES, scores):
        print(f"  query: {query}")
        for index in np.argsort(-row)[: args.top_k]:
            print(f"    {row[index]:.3f}  {corpus[index]}")
    print()

    if resolve_data_dir(args.data_dir) is None:
        print("STSb test: skipped (no data directory; pass --data-dir or set SBERT_DATA)")
    else:
        print(
            f"STSb test Spearman (cosine) x 100: {stsb_test_spearman(model, args.data_dir):.2f}"
            "   (published for all-MiniLM-L6-v2: 82.03)"
        )
    print(f"\ndone in {time.perf_counter() - start:.1f} s")
    return 0


def stsb_test_spearman(model: SentenceEncoder, data_dir: str | None) -> float:
    return SimilarityEvaluator(read_stsb("test", data_dir), name="stsb-test")(model)["spearman_cosine"]
