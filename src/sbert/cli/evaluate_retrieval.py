"""``sbert evaluate retrieval DIR``: NDCG@10, MRR@10, MAP@100 and Recall@k of a BEIR folder or a proxy
set, by exact search or through an index kind; the arguments are registered by ``cli/evaluate.py``.

A sparse encoder (a SPLADE folder, told by its ``config_sentence_transformers.json``, or any model
with ``--sparse``, e.g. a plain ``*ForMaskedLM`` folder) is searched exactly over its sparse vectors,
and the table adds the active dimensions of queries and documents."""

from __future__ import annotations

import argparse
from typing import Any

from sbert.base import json_text
from sbert.cli.common import add_prompt_arguments, positive_int
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
    group.add_argument(
        "--top-k", type=positive_int, default=100, help="retrieval: results per query (default 100)"
    )
    group.add_argument(
        "--document-prompt-name",
        default=None,
        help="retrieval: the corpus prompt (default: the model's document prompt)",
    )
    group.add_argument(
        "--run", default=None, help="retrieval: write the (last) ranked lists as a TREC run file"
    )
    group.add_argument(
        "--sparse",
        action="store_true",
        help="retrieval: load the model as a sparse encoder (SPLADE; a SparseEncoder folder is told on its own)",
    )
    group.add_argument(
        "--max-active-dims",
        type=positive_int,
        default=None,
        help="retrieval, sparse: keep each vector's N largest weights (default: the model's)",
    )
    add_prompt_arguments(parser, default="the model's query prompt")


def is_sparse_model(name: str | None) -> bool:
    """Whether ``name`` is a local folder saved as a sparse encoder (:func:`~sbert.sparse.format.is_sparse_folder`)."""
    from pathlib import Path

    if name is None or not Path(name).is_dir():
        return False
    from sbert.sparse.format import is_sparse_folder

    return is_sparse_folder(Path(name))


def run_retrieval(args: argparse.Namespace) -> int:

    from sbert.base.files import write_text_atomic
    from sbert.cli.common import load_model
    from sbert.data.beir import load_retrieval_set
    from sbert.evaluation.retrieval import embed_set, search_and_score, write_run

    if args.dataset is None:
        raise ValueError(f"sbert evaluate retrieval needs a BEIR folder or one of {', '.join(PROXY_SETS)}")
    if args.prompt is not None:
        raise ValueError("retrieval takes prompts by name: --prompt-name (queries), --document-prompt-name")
    dataset = load_retrieval_set(args.dataset, args.data_dir, args.split, args.skip_bad_lines)
    if args.sparse or is_sparse_model(args.model):
        return run_sparse_retrieval(args, dataset)
    if args.max_active_dims is not None:
        raise ValueError("--max-active-dims applies to a sparse model only (see --sparse)")
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
        write_text_atomic(args.output, json_text.dumps(report, indent=2) + "\n")
    return 0


def run_sparse_retrieval(args: argparse.Namespace, dataset: Any) -> int:
    """Exact search over a sparse encoder's vectors; one table row, with the active dimensions."""

    from sbert.base.files import write_text_atomic
    from sbert.evaluation.retrieval import write_run
    from sbert.evaluation.sparse_retrieval import evaluate_sparse_retrieval
    from sbert.sparse.model import SparseEncoder

    refused = [
        flag
        for flag, used in (("--index-kind", args.index_kind != ["exact"]), ("--dimensions", args.dimensions))
        if used
    ]
    if refused:
        raise ValueError(
            f"{refused[0]} does not apply to a sparse model: it is searched exactly, every dimension"
        )
    model = SparseEncoder.from_pretrained(args.model, device=args.device)
    result = evaluate_sparse_retrieval(
        model,
        dataset,
        args.top_k,
        args.prompt_name,
        args.document_prompt_name,
        args.batch_size,
        args.max_active_dims,
        show_progress_bar=True,
    )
    print(
        f"{dataset.name}: {result.queries} queries, {result.documents} documents, sparse model {model.name}"
    )
    names = list(result.metrics)
    print("| search | " + " | ".join(names) + " | search ms/query |")
    print("|---" * (len(names) + 2) + "|")
    per_query = 1000 * result.seconds["search"] / max(result.queries, 1)
    cells = " | ".join(
        f"{result.metrics[n]:.4f}" if n != "avg_flops" else f"{result.metrics[n]:.2f}" for n in names
    )
    print(f"| sparse exact | {cells} | {per_query:.2f} |")
    if args.run:
        write_run(result.run, args.run)
    if args.output:
        report = {"model": model.name, "sparse": True, "results": [result.to_dict()]}
        write_text_atomic(args.output, json_text.dumps(report, indent=2) + "\n")
    return 0


def _size(count: int) -> str:
    from sbert.index.kinds import format_bytes

    return f"{count / 1024:.0f} KiB" if count < 2**20 else format_bytes(count)
