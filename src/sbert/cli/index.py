"""``sbert index build --corpus FILE | --store DIR --output DIR``: a FAISS index of a corpus or a store;
``--kind sparse`` / ``--kind seismic``: a sparse index of a corpus encoded by a sparse model (SPLADE)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.cli.common import (
    add_batch_size_argument,
    add_model_arguments,
    add_prompt_arguments,
    load_model,
    positive_int,
)
from sbert.data.texts import TEXT_FORMATS, read_texts

if TYPE_CHECKING:
    from sbert.embeddings.identity import ModelIdentity
    from sbert.encoder.model import SentenceEncoder
    from sbert.index import VectorIndex
    from sbert.index.options import IndexOptions

KINDS = ("auto", "flat", "hnsw", "ivf", "binary", "binary_ivf", "ivfpq")  # as sbert.index
SPARSE_KINDS = {"sparse": "exact", "seismic": "seismic"}  # CLI kind → sbert.index.sparse_index kind


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("index", help="build a vector index of a corpus or a store (FAISS)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="index a corpus file (embedded now) or an embedding store, into an index directory",
        description="Index one sentence per input row (or every vector of a store) and save a FAISS "
        "index with a manifest. From a store, memory stays bounded: the index trains on a sample, "
        "adds the store shard by shard and looks texts up in the store.",
    )
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", help="text file (one sentence a line), .jsonl or .csv/.tsv")
    source.add_argument(
        "--store", help="embedding store directory (`sbert encode FILE -o DIR/`): no encoding needed"
    )
    build.add_argument(
        "--output",
        "-o",
        required=True,
        help="index directory to write: new, empty, or an sbert index (replaced atomically); anything else is refused",
    )
    build.add_argument(
        "--kind",
        choices=(*KINDS, *SPARSE_KINDS),
        default="auto",
        help="flat (exact), hnsw, ivf (float vectors in memory); binary (exact Hamming), binary_ivf, "
        "ivfpq (compressed, candidates re-scored from disk); auto: by size and --max-memory, and says why. "
        "sparse (exact) and seismic (approximate, Seismic): a sparse index, --model a sparse model (SPLADE)",
    )
    build.add_argument(
        "--max-memory",
        type=memory_size,
        default=None,
        help="memory the index may take when searched, e.g. 8G (for --kind auto)",
    )
    build.add_argument(
        "--rescore",
        choices=("int8", "float16", "float32", "none"),
        default="int8",
        help="compressed kinds: precision of the on-disk vectors that re-rank candidates (default int8; "
        "float32 gives exact scores)",
    )
    build.add_argument(
        "--dimensions",
        type=positive_int,
        default=None,
        metavar="D",
        help="index only the first D dimensions of each vector, unit length again (a Matryoshka "
        "model's prefix); searches cut their queries the same way",
    )
    add_text_arguments(build)
    add_batch_size_argument(build)
    add_model_arguments(build)
    add_prompt_arguments(build, default="the model's document prompt, as encode_document()")
    build.set_defaults(handler=run_build)


def add_text_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=TEXT_FORMATS, default="auto", help="input format (default: by extension)"
    )
    parser.add_argument(
        "--column", default="text", help="field holding the sentence in JSONL/CSV (default: text)"
    )


def run_build(args: argparse.Namespace) -> int:
    from sbert.base.outputs import claim_output
    from sbert.index.files import INDEX

    with claim_output(args.output, INDEX):  # before any encoding: a wrong --output costs nothing
        return _build(args)


def memory_size(value: str) -> int:
    """``--max-memory``'s ``type=``: a memory size above 0 (``8G``, ``512M``, ``1.5GB``) in bytes."""
    from sbert.index import parse_bytes  # imports torch: only when the option is given

    try:
        size = parse_bytes(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    if size < 1:
        raise argparse.ArgumentTypeError(f"expected a memory size above 0 (e.g. 8G, 512M), got {value!r}")
    return size


def _build(args: argparse.Namespace) -> int:

    if args.kind in SPARSE_KINDS:
        return _build_sparse(args)
    from sbert.index import VectorIndex
    from sbert.index.options import IndexOptions

    start = time.perf_counter()
    options = IndexOptions(
        kind=args.kind,
        rescore=None if args.rescore == "none" else args.rescore,
        max_memory=args.max_memory,
        dimensions=args.dimensions,
    )
    if args.store:
        index = _build_from_store(args, options)
        what = f"{len(index)} vectors of store {args.store}"
    else:
        model = load_model(args)
        texts, vectors = _encode_corpus(args, model)
        index = VectorIndex.build(
            vectors,
            texts=texts,
            options=options,
            identity=resolved_identity(model, args.model),
            show_progress_bar=len(texts) >= 100_000,
        )
        index.document_prompt = model.document_prompt(args.prompt_name, args.prompt)
        index.save(args.output)
        what = f"{len(index)} sentences"
    if index.choice:
        print(f"kind auto: {index.choice}", file=sys.stderr)
    size = f"{index.dim}-d" + (f" of {index.truncated_from}" if index.truncated_from else "")
    print(
        f"indexed {what} ({index.kind}, {size}, model {index.model_name}) into {args.output} "
        f"in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    return 0


def _build_sparse(args: argparse.Namespace) -> int:
    """A :class:`~sbert.index.sparse_index.SparseIndex` of ``--corpus``, encoded by a sparse model."""
    from sbert.index.sparse_index import SparseIndex

    if args.store:
        raise ValueError(
            f"--kind {args.kind}: a store holds dense vectors; index a --corpus with a sparse model"
        )
    if args.dimensions is not None or args.max_memory is not None:
        raise ValueError(f"--kind {args.kind}: --dimensions and --max-memory are for dense indexes")
    start = time.perf_counter()
    model = load_sparse_model(args)
    texts, vectors = _encode_corpus(args, model)
    index = SparseIndex.build(
        vectors,
        texts=texts,
        kind=SPARSE_KINDS[args.kind],
        model=model,
        identity=resolved_identity(model, args.model),
    )
    index.save(args.output)
    print(
        f"indexed {len(index)} sentences ({index.kind} sparse, {index.dim} dimensions, "
        f"{index.matrix.nnz / len(index):.0f} active per document, model {index.model_name}) into "
        f"{args.output} in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    return 0


def _encode_corpus(args: argparse.Namespace, model: Any) -> tuple[list[str], Any]:
    """The sentences of ``--corpus`` and their document vectors by ``model`` (dense or sparse)."""
    from sbert.base.options import PROGRESS_BAR_MIN_SENTENCES

    texts = read_texts(args.corpus, args.format, args.column)
    if not texts:
        raise ValueError(f"{args.corpus}: no sentences to index")
    vectors = model.encode_document(
        texts,
        batch_size=args.batch_size,
        show_progress_bar=len(texts) >= PROGRESS_BAR_MIN_SENTENCES,
        prompt_name=args.prompt_name,
        prompt=args.prompt,
    )
    return texts, vectors


def load_sparse_model(args: argparse.Namespace) -> Any:
    """The sparse model of ``--model`` (``--pooling`` is a dense model's, refused here)."""
    from sbert.sparse.model import SparseEncoder

    if args.pooling is not None:
        raise ValueError("--pooling is a dense model's option; a sparse model pools by its SpladePooling")
    if args.model is None:
        raise ValueError("a sparse index needs a sparse model (SPLADE): pass --model")
    return SparseEncoder.from_pretrained(
        args.model, device=args.device, precision=args.precision, backend=args.backend
    )


def _build_from_store(args: argparse.Namespace, options: IndexOptions) -> VectorIndex:
    from sbert.index.building import StoreSource, build_index
    from sbert.store import EmbeddingStore

    store = EmbeddingStore.open(args.store)
    if args.model is not None or args.pooling is not None:
        from sbert.embeddings.identity import check_same_model

        check_same_model(store.identity, load_model(args), f"{args.store}")
    return build_index(
        StoreSource(store),
        args.output,
        options=options,
        identity=store.identity,
        store_path=args.store,
        show_progress_bar=True,
    )


def resolved_identity(model: SentenceEncoder | Any, name: str | None) -> ModelIdentity:
    """The model's identity with the absolute directory its weights came from.

    A search then loads exactly that directory, never re-resolving a relative name (which another
    working directory could turn into a hub id).
    """
    import dataclasses

    from sbert.embeddings.identity import model_identity
    from sbert.encoder.hub import resolve_model_path

    identity = model_identity(model)
    if identity.source is None:
        identity = dataclasses.replace(identity, source=str(Path(resolve_model_path(name)).resolve()))
    return identity
