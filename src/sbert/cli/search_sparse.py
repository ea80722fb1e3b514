"""``sbert search`` over a sparse index (``--index`` holding one) and hybrid search (``--index`` dense plus
``--sparse-index``): the shells over :mod:`sbert.index.sparse_index` and :mod:`sbert.index.hybrid`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.cli.common import non_negative_float, positive_int

if TYPE_CHECKING:
    from sbert.embeddings.search import Hit

# sbert.index.hybrid's constants, written out: importing it would import torch for every CLI start.
FUSIONS, DEFAULT_FUSION_CANDIDATES = ("rrf", "weighted"), 100


def add_sparse_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sparse and hybrid search")
    group.add_argument(
        "--sparse-index",
        metavar="DIR",
        default=None,
        help="a sparse index (`sbert index build --kind sparse|seismic`) of the same corpus as --index: "
        "hybrid search, the two result lists fused (--fusion)",
    )
    group.add_argument(
        "--sparse-model",
        metavar="MODEL",
        default=None,
        help="the sparse index's model (default: the one its manifest records); --model is the dense one's",
    )
    group.add_argument(
        "--fusion",
        choices=FUSIONS,
        default="rrf",
        help="rrf: reciprocal-rank fusion, 1/(60 + rank) summed (default); weighted: --weights times "
        "each list's scores min-max normalised per query",
    )
    group.add_argument(
        "--weights",
        nargs=2,
        type=non_negative_float,
        metavar=("DENSE", "SPARSE"),
        default=(0.5, 0.5),
        help="--fusion weighted: the weights of the dense and sparse scores, each 0 or more and not both 0 "
        "(default 0.5 0.5)",
    )
    group.add_argument(
        "--fusion-candidates",
        metavar="N",
        type=positive_int,
        default=DEFAULT_FUSION_CANDIDATES,
        help=f"hits taken from each index before fusing (default {DEFAULT_FUSION_CANDIDATES})",
    )
    group.add_argument(
        "--query-cut",
        type=positive_int,
        default=None,
        help="seismic: how many of the query's heaviest dimensions are visited, at least 1 (default: the "
        "index's, 10); more is more exact and slower",
    )
    group.add_argument(
        "--heap-factor",
        type=non_negative_float,
        default=None,
        help="seismic: a block is visited when its summary scores above this × the k-th best so far, 0 or "
        "more (default: the index's, 0.7); less is more exact and slower",
    )


def check_sparse_arguments(args: argparse.Namespace) -> None:
    if args.sparse_index and not args.index:
        raise ValueError("--sparse-index fuses with a dense --index: name both (hybrid search)")
    if args.sparse_index and args.rescore_with:
        raise ValueError(
            "--rescore-with and --sparse-index cannot be combined: choose a cascade or hybrid search"
        )
    if not any(args.weights):  # each is a finite number of 0 or more (parsed so)
        raise ValueError("--weights 0 0: at least one of the two weights must be above 0")


def is_sparse(path: str) -> bool:
    from sbert.index.sparse_index import is_sparse_index

    return is_sparse_index(path)


def load_sparse_model_of_index(path: str, model: str | None, args: argparse.Namespace) -> Any:
    """``model``, else the absolute directory the sparse index's manifest records (as the dense index's)."""
    from sbert.base.errors import ModelLoadError
    from sbert.index.sparse_index import read_sparse_manifest
    from sbert.sparse.model import SparseEncoder

    if model is None:
        manifest = read_sparse_manifest(Path(path) / "manifest.json")
        source = (manifest.get("identity") or {}).get("source")
        if source is not None and not Path(source).is_dir():
            raise ModelLoadError(
                f"{Path(path) / 'manifest.json'}: the index was built with the model in {source}: "
                "no such directory; pass the model with that model (--model, or --sparse-model for hybrid)"
            )
        model = source or manifest["model"]
    return SparseEncoder.from_pretrained(
        model, device=args.device, precision=args.precision, backend=args.backend
    )


def sparse_search(args: argparse.Namespace, path: str, model_name: str | None) -> tuple[Any, list[list[Hit]]]:
    """The sparse index at ``path`` and the hits of the queries (``args.fusion_candidates`` of them for hybrid)."""
    from sbert.index.sparse_index import SparseIndex

    model = load_sparse_model_of_index(path, model_name, args)
    index = SparseIndex.load(path, model=model)
    if index.kind != "seismic" and (args.query_cut is not None or args.heap_factor is not None):
        raise ValueError(
            f"{path}: an exact sparse index; --query-cut and --heap-factor are Seismic's settings"
        )
    queries = model.encode_query(args.queries, prompt_name=args.prompt_name, prompt=args.prompt)
    top_k = max(args.top_k, args.fusion_candidates) if args.sparse_index else args.top_k
    return index, index.search(queries, top_k=top_k, query_cut=args.query_cut, heap_factor=args.heap_factor)


def run_sparse(args: argparse.Namespace) -> tuple[list[list[Hit]], dict[int, str | None]]:
    """``--index`` names a sparse index: its model (``--model`` or the manifest's) encodes the queries."""
    if args.pooling is not None:
        raise ValueError(f"{args.index} is a sparse index: --pooling is a dense model's option")
    index, results = sparse_search(args, args.index, args.model)
    found = sorted({hit.corpus_id for hits in results for hit in hits})
    return results, dict(zip(found, index.texts_of(found)))


def run_hybrid(args: argparse.Namespace, dense_search: Any) -> tuple[list[list[Hit]], dict[int, str | None]]:
    """The dense ``--index`` and the ``--sparse-index`` searched, each list fused (:func:`sbert.index.hybrid.fuse`).

    ``dense_search(top_k)`` gives the dense index and its hits. Refused: indexes of different corpora
    (other sizes, or other texts under the same id).
    """
    from sbert.index.hybrid import fuse

    if not is_sparse(args.sparse_index):
        raise ValueError(
            f"--sparse-index {args.sparse_index}: not a sparse index (`sbert index build --kind sparse`)"
        )
    if is_sparse(args.index):
        raise ValueError(f"--index {args.index}: a sparse index; hybrid search needs the dense one there")
    sparse_index, sparse_hits = sparse_search(args, args.sparse_index, args.sparse_model)
    dense_index, dense_hits = dense_search(max(args.top_k, args.fusion_candidates))
    if len(dense_index) != len(sparse_index):
        raise ValueError(
            f"--index holds {len(dense_index)} documents but --sparse-index {len(sparse_index)}: "
            "build both from the same corpus"
        )
    results = fuse(dense_hits, sparse_hits, args.fusion, top_k=args.top_k, weights=tuple(args.weights))
    found = sorted({hit.corpus_id for hits in results for hit in hits})
    texts = dict(zip(found, dense_index.texts_of(found)))
    for corpus_id, text in zip(found, sparse_index.texts_of(found)):
        if texts[corpus_id] is None:
            texts[corpus_id] = text
        elif text is not None and text != texts[corpus_id]:
            raise ValueError(
                f"id {corpus_id} is {texts[corpus_id]!r} in --index but {text!r} in --sparse-index: "
                "build both from the same corpus"
            )
    return results, texts
