"""``sbert demo``: the main job on the bundled model, in one command.

Embeds a small corpus written for the project, prints a similarity table, the nearest corpus
sentences for a few queries, the most similar pairs (paraphrase mining), the corpus in clusters and,
when the data directory is present, the STSb test Spearman.
"""

from __future__ import annotations

import argparse
import time
from importlib import resources
from typing import TYPE_CHECKING

from sbert.cli.common import add_data_argument, add_model_arguments, load_model, positive_int
from sbert.cli.similarity import format_matrix
from sbert.data.paths import missing_data_message, resolve_data_dir

if TYPE_CHECKING:
    from sbert.encoder.model import SentenceEncoder

QUERIES = [
    "Someone is making music.",
    "A spacecraft was sent into space.",
    "The software had a defect.",
    "Prices keep going up.",
]
DEMO_CLUSTERS = 8  # the corpus is written as 8 topics of 4 sentences
TABLE_SENTENCES = [
    "A man is playing a guitar.",
    "Someone is playing an instrument.",
    "A chef is cooking a meal.",
    "The rocket flew to the moon.",
    "A person plays music.",
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="embed, compare and search a small corpus (the main job)")
    parser.add_argument("--top-k", type=positive_int, default=3, help="nearest sentences shown per query")
    add_model_arguments(parser)
    add_data_argument(parser)
    parser.set_defaults(handler=run)


def demo_corpus() -> list[str]:
    text = resources.files("sbert").joinpath("resources/demo_corpus.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def run(args: argparse.Namespace) -> int:
    from sbert.applications import agglomerative, paraphrase_mining, semantic_search
    from sbert.applications.clustering import labels_to_clusters
    from sbert.embeddings.similarity import cosine_matrix

    start = time.perf_counter()
    model = load_model(args)
    print(f"model: {model.name} ({model.dim}-d, {model.pooling.mode} pooling, {model.device})\n")

    print("Cosine similarity")
    vectors = model.encode(TABLE_SENTENCES)
    print(format_matrix(TABLE_SENTENCES, cosine_matrix(vectors, vectors)), "\n")

    corpus = demo_corpus()
    corpus_vectors = model.encode(corpus)
    results = semantic_search(model.encode(QUERIES), corpus_vectors, top_k=args.top_k)
    print(f"Semantic search over {len(corpus)} corpus sentences")
    for query, hits in zip(QUERIES, results):
        print(f"  query: {query}")
        for hit in hits:
            print(f"    {hit.score:.3f}  {corpus[hit.corpus_id]}")
    print()

    print("Paraphrase mining: the most similar pairs in the corpus")
    for pair in paraphrase_mining(corpus_vectors, top_k=5, max_pairs=3):
        print(f"    {pair.score:.3f}  {corpus[pair.i]}  <->  {corpus[pair.j]}")
    print()

    clusters = labels_to_clusters(
        agglomerative(corpus_vectors, n_clusters=DEMO_CLUSTERS, linkage_method="complete")
    )
    print(f"Agglomerative clustering (complete linkage) into {DEMO_CLUSTERS} clusters")
    for number, members in enumerate(clusters):
        shown = " | ".join(corpus[i] for i in members[:2]) + (" | ..." if len(members) > 2 else "")
        print(f"  {number} ({len(members)}): {shown}")
    print()

    if resolve_data_dir(args.data_dir) is None:
        print(f"STSb test: skipped ({missing_data_message('no data directory')})")
    else:
        print(
            f"STSb test Spearman (cosine) x 100: {stsb_test_spearman(model, args.data_dir):.2f}"
            "   (published for all-MiniLM-L6-v2: 82.03)"
        )
    print(f"\ndone in {time.perf_counter() - start:.1f} s")
    return 0


def stsb_test_spearman(model: SentenceEncoder, data_dir: str | None) -> float:
    from sbert.data import read_stsb
    from sbert.evaluation import SimilarityEvaluator

    return SimilarityEvaluator(read_stsb("test", data_dir), name="stsb-test")(model)["spearman_cosine"]
