"""``sbert search --index DIR "query" ...`` (or ``--corpus FILE``): the nearest sentences of each query;
``--rescore-with MODEL`` re-ranks the index's candidates with a stronger model (a cascade). ``--index``
may be a sparse index; ``--sparse-index DIR`` with a dense ``--index`` is hybrid search."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.base import json_text
from sbert.cli.common import add_model_arguments, add_prompt_arguments, load_model, positive_int

if TYPE_CHECKING:
    from sbert.encoder.model import SentenceEncoder
from sbert.cli.index import add_text_arguments
from sbert.cli.search_sparse import (
    add_sparse_arguments,
    check_sparse_arguments,
    is_sparse,
    run_hybrid,
    run_sparse,
)
from sbert.data.texts import read_texts

# sbert.index.cascade.DEFAULT_CANDIDATES, written out: importing it would import torch for
# every CLI start (tests/cli pins the two equal).
DEFAULT_CANDIDATES = 50

if TYPE_CHECKING:
    from sbert.embeddings.search import Hit


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "search",
        help="nearest sentences of queries, in an index or a corpus file",
        description="Search a saved index (--index) or embed a corpus file for one exact search (--corpus).",
    )
    parser.add_argument("queries", nargs="+", help="one or more query sentences")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--index", help="index directory from `sbert index build` (dense or sparse)")
    source.add_argument("--corpus", help="corpus file, embedded now and searched exactly")
    parser.add_argument("--top-k", "-k", type=positive_int, default=5, help="results per query (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON line per query")
    add_text_arguments(parser)
    add_model_arguments(parser)
    add_prompt_arguments(parser, default="the model's query prompt, as encode_query()")
    parser.add_argument(
        "--document-prompt-name",
        default=None,
        help="--corpus: the prompt for the corpus by name (default: the model's document prompt)",
    )
    cascade = parser.add_argument_group("cascade (with --index)")
    cascade.add_argument(
        "--rescore-with",
        metavar="MODEL",
        default=None,
        help="re-rank the index's candidates by this stronger bi-encoder's cosine (its query and "
        "document prompts; --device, --precision, --backend apply to it too); the scores printed are its "
        "own. Needs an index that holds its texts",
    )
    cascade.add_argument(
        "--rescore-candidates",
        metavar="N",
        type=positive_int,
        default=None,
        help=f"--rescore-with: candidates taken from the index per query (default {DEFAULT_CANDIDATES}; "
        "at least --top-k)",
    )
    add_sparse_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sbert.embeddings.search import semantic_search

    check_cascade_arguments(args)
    check_sparse_arguments(args)
    if args.index and args.sparse_index:
        results, texts = run_hybrid(args, lambda top_k: dense_search(args, top_k))
    elif args.index and is_sparse(args.index):
        if args.rescore_with:
            raise ValueError(
                f"{args.index} is a sparse index: --rescore-with re-ranks a dense index's candidates"
            )
        results, texts = run_sparse(args)
    elif args.index and args.rescore_with:
        results, texts = cascade(args)
    elif args.index:
        index, results = dense_search(args, args.top_k)
        found = sorted({hit.corpus_id for hits in results for hit in hits})
        texts = dict(zip(found, index.texts_of(found)))
    else:
        corpus = read_texts(args.corpus, args.format, args.column)
        if not corpus:
            raise ValueError(f"{args.corpus}: no sentences to search")
        model = load_model(args)
        vectors = model.encode_document(
            corpus, show_progress_bar=len(corpus) >= 1000, prompt_name=args.document_prompt_name
        )
        queries = model.encode_query(args.queries, prompt_name=args.prompt_name, prompt=args.prompt)
        results = semantic_search(queries, vectors, top_k=args.top_k)
        texts = dict(enumerate(corpus))
    for query, hits in zip(args.queries, results):
        print_hits(query, hits, texts, args.json)
    return 0


def dense_search(args: argparse.Namespace, top_k: int) -> tuple[Any, list[list[Hit]]]:
    """The dense ``--index`` (checked against its model) and the ``top_k`` hits of each query."""
    from sbert.index import VectorIndex

    model = load_model_of_index(args)
    index = VectorIndex.load(args.index, model=model)
    queries = model.encode_query(args.queries, prompt_name=args.prompt_name, prompt=args.prompt)
    return index, index.search(index.query_vectors(queries), top_k=top_k)


def check_cascade_arguments(args: argparse.Namespace) -> None:
    if args.rescore_candidates is not None and not args.rescore_with:
        raise ValueError("--rescore-candidates is for --rescore-with MODEL: name the model that re-ranks")
    if args.rescore_with and not args.index:
        raise ValueError(
            "--rescore-with re-ranks an index's candidates: use it with --index, or search --corpus "
            "with the stronger model itself (--model)"
        )


def cascade(args: argparse.Namespace) -> tuple[list[list[Hit]], dict[int, str | None]]:
    """The index's candidates re-ranked by ``--rescore-with`` (:func:`sbert.index.cascade.cascade_search`)."""
    from sbert.encoder.model import SentenceEncoder
    from sbert.index import VectorIndex
    from sbert.index.cascade import cascade_search, check_has_texts

    model = load_model_of_index(args)
    index = VectorIndex.load(args.index, model=model)
    try:
        check_has_texts(index)  # before loading the rescorer: a refusal should be quick
    except ValueError as error:
        raise ValueError(f"{args.index}: {error}; --rescore-with cannot be used with it") from None
    # The transformer is where --precision and --backend matter: they apply to it as to the index's model.
    rescorer = SentenceEncoder.from_pretrained(
        args.rescore_with, device=args.device, precision=args.precision, backend=args.backend
    )
    queries = model.encode_query(args.queries, prompt_name=args.prompt_name, prompt=args.prompt)
    results = cascade_search(
        index,
        args.queries,
        queries,
        rescorer,
        top_k=args.top_k,
        candidates=args.rescore_candidates or DEFAULT_CANDIDATES,
    )
    found = sorted({hit.corpus_id for hits in results for hit in hits})
    return results, dict(zip(found, index.texts_of(found)))


def load_model_of_index(args: argparse.Namespace) -> SentenceEncoder:
    """The model that made the index: ``--model``, else the absolute directory its manifest records.

    A recorded directory is used as it is, never re-resolved as a name (a relative name read from
    another working directory could be taken for a hub id); a directory that is gone is an error.
    """
    from sbert.base.errors import ModelLoadError
    from sbert.index import MANIFEST_FILE, read_manifest

    if args.model is None:
        manifest = read_manifest(Path(args.index) / MANIFEST_FILE)
        source = (manifest.get("identity") or {}).get("source")
        if source is not None and not Path(source).is_dir():
            raise ModelLoadError(
                f"{Path(args.index) / MANIFEST_FILE}: the index was built with the model in {source}: "
                "no such directory; pass --model with that model"
            )
        args.model = source or manifest["model"]
    return load_model(args)


def print_hits(query: str, hits: list[Hit], texts: dict[int, str | None], as_json: bool) -> None:
    if as_json:
        record = {
            "query": query,
            "hits": [{"id": h.corpus_id, "score": h.score, "text": texts[h.corpus_id]} for h in hits],
        }
        print(json_text.dumps(record, ensure_ascii=False))
        return
    print(f"query: {query}")
    for hit in hits:
        print(f"  {hit.score:.3f}  [{hit.corpus_id}] {texts[hit.corpus_id]}")
