"""``sbert evaluate sts|senteval|all``: the paper's Tables 1, 2 and 5 for any model, ours beside the paper's.

Prints Markdown tables (paper rows marked ``paper``, measured rows ``ours``), each with the precision
the vectors were computed in, and with ``--output`` writes every figure to a JSON file (atomically).
An evaluation is a measurement: it runs in float32 unless ``--precision`` says otherwise.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sbert.base import json_text
from sbert.cli.common import add_batch_size_argument, add_data_argument, add_model_arguments, positive_int
from sbert.cli.evaluate_retrieval import add_retrieval_arguments, run_retrieval

SUITES = {"sts": ("sts",), "senteval": ("senteval",), "all": ("sts", "senteval")}
# Kept here, not imported, so that building the parser imports no heavy module; a test checks that
# they equal the library's sbert.evaluation.sts.STS_SETS, senteval.TRANSFER_TASKS and PROTOCOLS,
# and sbert.data.sts.STS_SOURCES.
STS_SETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R")
TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
PROTOCOLS = ("senteval", "fast")
STS_SOURCES = ("original", "senteval")

if TYPE_CHECKING:
    from sbert.evaluation.similarity import Encoder


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="the paper's STS (Tables 1, 2) and SentEval (Table 5) evaluations, and retrieval",
        description="Evaluate a model on the paper's STS sets and/or SentEval transfer tasks and print "
        "the results beside the paper's figures. Runs in float32 unless --precision says otherwise "
        "(--precision auto is faster and moves STS figures by up to 0.1).",
        intermixed=True,  # `evaluate retrieval --model M SET` as well as `evaluate retrieval SET --model M`
    )
    parser.add_argument(
        "suite", choices=(*SUITES, "retrieval"), help="sts, senteval, all, or retrieval (then a dataset)"
    )
    parser.add_argument(
        "--baselines",
        action="store_true",
        help="also evaluate averaged GloVe and the model's averaged token vectors and CLS vector",
    )
    parser.add_argument("--output", "-o", default=None, help="write every figure to this JSON file")
    parser.add_argument("--sets", nargs="+", choices=STS_SETS, default=None, help="STS sets (default: all)")
    parser.add_argument(
        "--tasks", nargs="+", choices=TRANSFER_TASKS, default=None, help="transfer tasks (default: all)"
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default="senteval",
        help="transfer classifier: senteval (default; SentEval's own protocol, comparable with the "
        "paper's Table 5) or fast (scikit-learn, several times faster, reads higher, not comparable)",
    )
    parser.add_argument(
        "--sts-source",
        choices=STS_SOURCES,
        default="original",
        help="STS12-16 text: original release (default, as MTEB) or SentEval's tokenized copy",
    )
    add_batch_size_argument(parser)
    parser.add_argument(
        "--dimensions",
        type=positive_int,
        nargs="+",
        default=None,
        metavar="D",
        help="also evaluate the first D dimensions of each vector, unit length again (Matryoshka), "
        "e.g. 256 128 64: sts and senteval add a row per D, retrieval a search per D",
    )
    parser.add_argument(
        "--skip-bad-lines", action="store_true", help="skip malformed data lines instead of stopping"
    )
    add_model_arguments(parser, precision="float32")
    add_data_argument(parser)
    add_retrieval_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import time

    from tqdm.auto import tqdm

    from sbert._version import __version__
    from sbert.base.files import write_text_atomic
    from sbert.cli.common import load_model
    from sbert.data.paths import resolve_data_dir
    from sbert.evaluation import paper
    from sbert.evaluation.baselines import AveragedGloVe, SharedNetworkPass
    from sbert.evaluation.senteval import TransferSettings
    from sbert.evaluation.senteval_validation import SentEvalSettings
    from sbert.evaluation.tables import format_report

    if args.suite == "retrieval":
        return run_retrieval(args)
    if args.dataset is not None:
        raise ValueError(f"{args.suite} takes no data set (got {args.dataset!r}): only retrieval does")
    if resolve_data_dir(args.data_dir) is None:
        from sbert.data.paths import missing_data_message

        raise FileNotFoundError(missing_data_message("no data directory"))
    model = load_model(args)
    encoders: dict[str, Encoder] = {f"ours: {model.name}": model}
    if args.baselines:
        # The token baselines reuse the model's network pass: one forward per sentence for all three.
        shared = SharedNetworkPass(model)
        encoders = {
            f"ours: {model.name}": shared.view("model"),
            "ours: Avg. GloVe 6B 50d": AveragedGloVe.from_package(),
            f"ours: {model.name}, avg. token vectors": shared.view("mean"),
            f"ours: {model.name}, CLS vector": shared.view("cls"),
        }
    if args.dimensions:
        encoders = _with_prefixes(encoders, f"ours: {model.name}", model.dim, args.dimensions)
    suites = SUITES[args.suite]
    results: dict[str, dict] = {label: {} for label in encoders}
    seconds: dict[str, dict[str, float]] = {label: {} for label in encoders}
    steps = [(label, suite) for label in encoders for suite in suites]
    with tqdm(steps, desc="Evaluating", unit="suite") as bar:
        for label, suite in bar:
            bar.set_postfix_str(f"{label.removeprefix('ours: ')} / {suite}")
            start = time.perf_counter()
            results[label][suite] = run_suite(encoders[label], suite, args)
            seconds[label][suite] = round(time.perf_counter() - start, 1)
    # The baselines share the model's network, so its precision; GloVe's vectors are float32 anyway.
    precision = model.precision
    print(format_report(results, seconds, precision, args.protocol))
    if args.output:
        settings = (
            SentEvalSettings().as_dict() if args.protocol == "senteval" else TransferSettings().__dict__
        )
        report = {
            "sbert_version": __version__,
            "model": model.name,
            "precision": precision,
            "suite": args.suite,
            "sts_source": args.sts_source,
            "transfer_protocol": args.protocol,
            "transfer_settings": settings,
            "results": results,
            "seconds": seconds,
            "paper": paper.as_json(),
        }
        write_text_atomic(args.output, json_text.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"\nwrote every figure to {args.output}")
    return 0


def _with_prefixes(
    encoders: dict[str, Encoder], label: str, dim: int, dimensions: list[int]
) -> dict[str, Encoder]:
    """The model's row, then one row per prefix length (Matryoshka), from one encoding of each sentence."""
    from sbert.embeddings.truncation import PrefixViews

    views = PrefixViews(encoders[label], dim)
    prefixes = {f"{label} @ {d} dims": views.view(d) for d in dict.fromkeys(dimensions) if d != dim}
    rows: dict[str, Encoder] = {}
    for name, encoder in encoders.items():
        rows[name] = views.view(None) if name == label else encoder
        if name == label:
            rows.update(prefixes)
    return rows


def run_suite(encoder: Encoder, suite: str, args: argparse.Namespace) -> dict:
    from sbert.evaluation.senteval import evaluate_transfer
    from sbert.evaluation.sts import evaluate_sts

    if suite == "sts":
        return evaluate_sts(
            encoder, args.data_dir, args.sets, args.sts_source, args.batch_size, args.skip_bad_lines
        )
    return evaluate_transfer(
        encoder,
        args.data_dir,
        args.tasks,
        batch_size=args.batch_size,
        skip_bad_lines=args.skip_bad_lines,
        protocol=args.protocol,
    )
