"""``sbert evaluate retrieval DIR``: NDCG@10, MRR@10, MAP@100 and Recall@k of a BEIR folder or a proxy
set, by exact search or through an index kind; the arguments are registered by ``cli/evaluate.py``."""

from __future__ import annotations

import argparse

from sbert.cli.common import add_prompt_arguments
from sbert.cli.index import KINDS
from sbert.data.sources import BEIR_SETS

PROXY_SETS = (
    "stsb-proxy",
    "snli-proxy",
    "sick-proxy",
    "sts12-16-proxy",
)  # as sbert.data.beir.PROXY_SETS (kept torch-free here)


def add_retrieval_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("retrieval")
    group.add_argument(
        "dataset",
        nargs="?",
        default=None,
        help=f"retrieval: a BEIR folder (corpus.jsonl, queries.jsonl, qrels/), {' / '.join(BEIR_SETS)} "
        f"(downloaded into the data folder) or {' / '.join(PROXY_SETS)} (built from the data folder)",
    )
    group.add_argument("--split", default="test", help="retrieval: the qrels split (default test)")
    group.add_argument(
        "--index-kind",
        choices=("exact", *(kind for kind in KINDS if kind != "auto")),
        nargs="+",
        default=["exact"],
        help="retrieval: exact search and/or index kinds to search through (default exact)",
    )
    group.add_argument("--top-k", type=int, default=100, help="retrieval: results per query (default 100)")
    group.add_argument(
        "--document-prompt-name",
        default=None,
        help="retrieval: the corpus prompt (default: the model's document prompt)",
    )
    group.add_argument(
        "--run", default=None, help="retrieval: write the (last) ranked lists as a TREC run file"
    )
    add_prompt_arguments(parser, default="the model's query prompt")


def run_retrieval(args: argparse.Namespace) -> int:
    import json

    from sbert.base.files import write_text_atomic
    from sbert.cli.common import load_model
    from sbert.data.beir import load_retrieval_set
    from sbert.evaluation.retrieval import embed_set, search_and_score, write_run

    if args.dataset is None:
        raise ValueError(f"sbert evaluate retrieval needs a BEIR folder or one of {', '.join(PROXY_SETS)}")
    if args.prompt is not None:
        raise ValueError("retrieval takes prompts by name: --prompt-name (queries), --document-prompt-name")
    dataset = load_retrieval_set(args.dataset, args.data_dir, args.split, args.skip_bad_lines)
    model = load_model(args)
    embedded = embed_set(
        model, dataset, args.prompt_name, args.document_prompt_name, args.batch_size, show_progress_bar=True
    )
    kinds = [None if kind == "exact" else kind for kind in args.index_kind]
    cuts = [None, *(args.dimensions or [])]
    results = [search_and_score(embedded, kind, args.top_k, cut) for cut in cuts for kind in kinds]
    print(
        f"{dataset.name}: {results[0].queries} queries, {results[0].documents} documents, model {model.name} "
        f"({model.precision})"
    )
    names = list(results[0].metrics)
    print("| search | dimensions | " + " | ".join(names) + " | memory | search ms/query |")
    print("|---" * (len(names) + 4) + "|")
    for result in results:
        per_query = 1000 * result.seconds["search"] / max(result.queries, 1)
        print(
            f"| {result.search} | {result.dimensions} | "
            + " | ".join(f"{result.metrics[n]:.4f}" for n in names)
            + f" | {_size(result.memory_bytes)} | {per_query:.2f} |"
        )
    if args.run:
        write_run(results[-1].run, args.run)
    if args.output:
        report = {
            "model": model.name,
            "precision": model.precision,
            "results": [r.to_dict() for r in results],
        }
        write_text_atomic(args.output, json.dumps(report, indent=2) + "\n")
    return 0


def _size(count: int) -> str:
    from sbert.index.kinds import format_bytes

    return f"{count / 1024:.0f} KiB" if count < 2**20 else format_bytes(count)
