"""``sbert cluster FILE --method ...``: group the sentences of a file by meaning."""

from __future__ import annotations

import argparse

from sbert.base import json_text
from sbert.cli.common import (
    add_batch_size_argument,
    add_model_arguments,
    float_in,
    load_model,
    non_negative_int,
    positive_int,
)
from sbert.cli.index import add_text_arguments
from sbert.data.texts import read_texts

METHODS = ("agglomerative", "kmeans", "community")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cluster",
        help="cluster the sentences of a file",
        description=(
            "agglomerative: average-linkage on cosine distance, cut at --n-clusters or --threshold; "
            "kmeans: --n-clusters; community: groups of at least --min-size sentences within --threshold "
            "cosine of a centre (other sentences stay unassigned)."
        ),
    )
    parser.add_argument("input", help="text file (one sentence a line), .jsonl, .csv/.tsv, or - for stdin")
    parser.add_argument(
        "--method",
        choices=METHODS,
        default="agglomerative",
        help="how to group (default agglomerative; see above)",
    )
    parser.add_argument(
        "--n-clusters", type=positive_int, default=None, help="number of clusters (agglomerative, kmeans)"
    )
    parser.add_argument(
        "--threshold",
        type=float_in(-1.0, 1.0),
        default=None,
        help="cosine similarity in [-1, 1] (agglomerative, community)",
    )
    parser.add_argument(
        "--min-size", type=positive_int, default=3, help="smallest community (community; default 3)"
    )
    parser.add_argument("--seed", type=non_negative_int, default=0, help="k-means seed")
    parser.add_argument("--json", action="store_true", help="one JSON line per cluster")
    add_batch_size_argument(parser)
    add_text_arguments(parser)
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sbert.applications.clustering import agglomerative, community_detection, kmeans, labels_to_clusters

    texts = read_texts(args.input, args.format, args.column)
    if not texts:
        raise ValueError(f"{args.input}: no sentences to cluster")
    model = load_model(args)
    vectors = model.encode(texts, batch_size=args.batch_size)
    if args.method == "agglomerative":
        if args.n_clusters is None and args.threshold is None:
            raise ValueError("agglomerative clustering needs --n-clusters or --threshold")
        clusters = labels_to_clusters(
            agglomerative(vectors, n_clusters=args.n_clusters, threshold=args.threshold)
        )
    elif args.method == "kmeans":
        if args.n_clusters is None:
            raise ValueError("kmeans needs --n-clusters")
        clusters = labels_to_clusters(kmeans(vectors, args.n_clusters, seed=args.seed))
    else:
        threshold = 0.75 if args.threshold is None else args.threshold
        clusters = community_detection(vectors, threshold=threshold, min_community_size=args.min_size)
    print_clusters(clusters, texts, args.json)
    return 0


def print_clusters(clusters: list[list[int]], texts: list[str], as_json: bool) -> None:
    for number, members in enumerate(clusters):
        if as_json:
            print(
                json_text.dumps(
                    {"cluster": number, "members": members, "texts": [texts[i] for i in members]},
                    ensure_ascii=False,
                )
            )
            continue
        print(f"cluster {number} ({len(members)} sentences)")
        for i in members:
            print(f"  [{i}] {texts[i]}")
    assigned = sum(len(members) for members in clusters)
    if not as_json and assigned < len(texts):
        print(f"{len(texts) - assigned} of {len(texts)} sentences in no cluster")
