"""``sbert mine-negatives PAIRS -o OUT``: hard negatives for (anchor, positive) pairs, written as a
training file that ``sbert train file`` reads (anchor, positive, negative_1 ... negative_k), or in
sentence-transformers' other formats (triplet, labeled-pair, labeled-list)."""

from __future__ import annotations

import argparse
import sys

from sbert.base.options import MINED_FORMATS, SAMPLING_STRATEGIES, TRAINING_FORMATS
from sbert.cli.common import (
    add_batch_size_argument,
    add_model_arguments,
    finite_float,
    load_model,
    non_negative_int,
    positive_int,
)
from sbert.cli.index import KINDS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mine-negatives",
        help="add hard negatives to (anchor, positive) pairs, as a training file",
        description="For each anchor, corpus texts that are close to it but are not its positive "
        "(sentence-transformers' mine_hard_negatives): exact search in bounded memory or through an "
        "index kind, optional margins and score limits, judged by the embedding model or a cross-encoder.",
    )
    parser.add_argument(
        "input", help="pairs: .csv/.tsv/.jsonl with anchor,positive or sentence1,sentence2 columns"
    )
    parser.add_argument("--output", "-o", required=True, help="training file to write (.csv, .tsv or .jsonl)")
    parser.add_argument("--format", choices=TRAINING_FORMATS, default="auto", help="input format")
    parser.add_argument(
        "--output-format",
        choices=MINED_FORMATS,
        default="n-tuple",
        help="n-tuple: anchor, positive, negative_1..k (rows short of k negatives are left out); "
        "triplet: one anchor, positive, negative row per negative; labeled-pair: sentence1, sentence2, "
        "label rows, 1 for each positive and 0 for each negative (train with --loss cosent); "
        "labeled-list: anchor, passages, labels rows, the positive then its negatives (.jsonl only) "
        "(default n-tuple)",
    )
    parser.add_argument("--corpus", default=None, help="more candidate texts besides the positives")
    parser.add_argument(
        "--index",
        default=None,
        help="a saved index of the corpus (sbert index build, e.g. from a store), made with --model: its "
        "texts are the candidates and its vectors stay on disk (instead of --corpus, --index-kind)",
    )
    parser.add_argument(
        "--corpus-column", default="text", help="field of --corpus in JSONL/CSV (default text)"
    )
    _add_selection_arguments(parser)
    parser.add_argument(
        "--cross-encoder", default=None, help="cross-encoder directory that scores candidates for the filters"
    )
    parser.add_argument(
        "--index-kind",
        choices=("exact", *(kind for kind in KINDS if kind != "auto")),
        default="exact",
        help="exact search in chunks (default) or an index kind over the corpus",
    )
    parser.add_argument(
        "--prompt-name", default=None, help="anchors' prompt (default: the model's query prompt)"
    )
    parser.add_argument(
        "--document-prompt-name", default=None, help="corpus prompt (default: the model's document prompt)"
    )
    add_batch_size_argument(parser)
    parser.add_argument(
        "--skip-bad-lines", action="store_true", help="skip malformed input lines (and count them)"
    )
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def _add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """Which candidates become negatives: ranks, score filters, strategy (MiningOptions' fields)."""
    parser.add_argument(
        "--num-negatives", type=positive_int, default=3, help="negatives per anchor (default 3)"
    )
    parser.add_argument(
        "--range-min", type=non_negative_int, default=0, help="skip this many best candidates (default 0)"
    )
    parser.add_argument(
        "--range-max",
        type=positive_int,
        default=None,
        help="candidates ranked per anchor (default: from the others)",
    )
    parser.add_argument(
        "--max-score", type=finite_float, default=None, help="keep candidates scoring at most this"
    )
    parser.add_argument(
        "--min-score", type=finite_float, default=None, help="keep candidates scoring at least this"
    )
    parser.add_argument(
        "--absolute-margin",
        type=finite_float,
        default=None,
        help="keep candidates scoring at least this much below the positive",
    )
    parser.add_argument(
        "--relative-margin",
        type=finite_float,
        default=None,
        help="keep candidates below positive - |positive| * this (NV-Retriever: 0.05)",
    )
    parser.add_argument(
        "--sampling-strategy",
        choices=SAMPLING_STRATEGIES,
        default="top",
        help="top: the best remaining candidates; random: drawn among all that remain (default top)",
    )
    parser.add_argument("--seed", type=non_negative_int, default=0, help="random strategy's seed (default 0)")
    parser.add_argument(
        "--include-positives", action="store_true", help="let an anchor's positives be among its negatives"
    )


def run(args: argparse.Namespace) -> int:
    from sbert.base.outputs import FILE, claim_output
    from sbert.data.training_files import check_training_output

    check_training_output(args.output)  # before any encoding: a wrong --output costs nothing
    with claim_output(args.output, FILE):
        return _mine(args)


def _mine(args: argparse.Namespace) -> int:
    from sbert.applications.hard_negatives import MiningOptions, mine_hard_negatives
    from sbert.applications.mined import check_mined_output, write_mined
    from sbert.data.texts import read_texts
    from sbert.data.training_files import read_anchor_positive_pairs

    check_mined_output(args.output, args.output_format)
    if args.index and (args.corpus or args.index_kind != "exact"):
        raise ValueError("--index is the corpus: give --index, or --corpus and --index-kind, not both")
    pairs = read_anchor_positive_pairs(args.input, args.format, args.skip_bad_lines)
    corpus = read_texts(args.corpus, "auto", args.corpus_column) if args.corpus else None
    cross_encoder = None
    if args.cross_encoder:
        from sbert.cross_encoder import CrossEncoder

        cross_encoder = CrossEncoder.from_pretrained(args.cross_encoder, device=args.device)
    model = load_model(args)
    index = None
    if args.index:
        from sbert.index import VectorIndex

        index = VectorIndex.load(args.index, model=model)  # refuses an index of another model
    options = MiningOptions(
        range_min=args.range_min,
        range_max=args.range_max,
        max_score=args.max_score,
        min_score=args.min_score,
        absolute_margin=args.absolute_margin,
        relative_margin=args.relative_margin,
        num_negatives=args.num_negatives,
        sampling_strategy=args.sampling_strategy,
        query_prompt_name=args.prompt_name,
        corpus_prompt_name=args.document_prompt_name,
        include_positives=args.include_positives,
        output_format=args.output_format,
        batch_size=args.batch_size,
        index_kind=None if args.index_kind == "exact" else args.index_kind,
        seed=args.seed,
        show_progress_bar=True,
    )
    result = mine_hard_negatives(
        pairs, model, options, corpus=corpus, cross_encoder=cross_encoder, index=index
    )
    if not result.rows:
        raise ValueError(
            f"{args.input}: no anchor got {args.num_negatives} negatives; widen --range-max or relax the filters"
        )
    write_mined(result, args.output)
    timing = ", ".join(f"{name} {value:.1f} s" for name, value in result.seconds.items())
    rows = len(result.table())
    print(f"{args.output}: {rows} rows from {len(pairs)} pairs ({timing})", file=sys.stderr)
    return 0
