"""``sbert evaluate sts|senteval|all``: the paper's Tables 1, 2 and 5 for any model, ours beside the paper's.

Prints Markdown tables (paper rows marked ``paper``, measured rows ``ours``) and, with ``--output``,
writes every figure to a JSON file (atomically).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence

from tqdm.auto import tqdm

from sbert import __version__
from sbert.cli.common import add_data_argument, add_model_arguments, load_model
from sbert.data.paths import resolve_data_dir
from sbert.data.sts import STS_SOURCES
from sbert.evaluation import paper
from sbert.evaluation.baselines import AveragedGloVe, SharedNetworkPass
from sbert.evaluation.senteval import TRANSFER_TASKS, TransferSettings, evaluate_transfer
from sbert.evaluation.similarity import Encoder
from sbert.evaluation.sts import STS_SETS, evaluate_sts, spearman_cosine
from sbert.files import write_text_atomic

SUITES = {"sts": ("sts",), "senteval": ("senteval",), "all": ("sts", "senteval")}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="the paper's STS (Tables 1, 2) and SentEval (Table 5) evaluations",
        description="Evaluate a model on the paper's STS sets and/or SentEval transfer tasks and print "
        "the results beside the paper's figures.",
    )
    parser.add_argument("suite", choices=tuple(SUITES), help="sts, senteval or all")
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
        "--sts-source",
        choices=STS_SOURCES,
        default="original",
        help="STS12-16 text: original release (default, as MTEB) or SentEval's tokenized copy",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--skip-bad-lines", action="store_true", help="skip malformed data lines instead of stopping"
    )
    add_model_arguments(parser)
    add_data_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
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
    print(format_report(results, seconds))
    if args.output:
        report = {
            "sbert_version": __version__,
            "model": model.name,
            "suite": args.suite,
            "sts_source": args.sts_source,
            "transfer_settings": TransferSettings().__dict__,
            "results": results,
            "seconds": seconds,
            "paper": paper.as_json(),
        }
        write_text_atomic(args.output, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"\nwrote every figure to {args.output}")
    return 0


def run_suite(encoder: Encoder, suite: str, args: argparse.Namespace) -> dict:
    if suite == "sts":
        return evaluate_sts(
            encoder, args.data_dir, args.sets, args.sts_source, args.batch_size, args.skip_bad_lines
        )
    return evaluate_transfer(
        encoder, args.data_dir, args.tasks, batch_size=args.batch_size, skip_bad_lines=args.skip_bad_lines
    )


def format_report(results: dict[str, dict], seconds: dict[str, dict[str, float]]) -> str:
    """Markdown tables: Table 1, Table 2 and Table 5, the paper's rows first, then ours, then timings."""
    parts = []
    sts = {label: spearman_cosine(r["sts"]) for label, r in results.items() if "sts" in r}
    if sts:
        parts.append(sts_table(sts))
        if any("STSb" in row for row in sts.values()):
            parts.append(stsb_table(sts))
    transfer = {label: r["senteval"] for label, r in results.items() if "senteval" in r}
    if transfer:
        parts.append(transfer_table(transfer))
    timing = ["| Model | " + " | ".join(f"{s} (s)" for s in ("sts", "senteval")) + " |", "|---|---|---|"]
    for label, row in seconds.items():
        timing.append(f"| {label} | {row.get('sts', '-')} | {row.get('senteval', '-')} |")
    parts.append("Wall time\n\n" + "\n".join(timing))
    return "\n\n".join(parts)


def _cells(values: Sequence[float | None], digits: int = 2) -> str:
    return " | ".join("-" if v is None else f"{v:.{digits}f}" for v in values)


def _average(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type, misc]


def sts_table(measured: dict[str, dict[str, float]]) -> str:
    """Table 1: Spearman × 100 (cosine) per STS set."""
    columns = [c for c in paper.TABLE1_COLUMNS if any(c in row for row in measured.values())]
    lines = [
        "Table 1: STS, Spearman x 100 of cosine similarity (STS12-16: all subsets pooled)",
        "",
        f"| Source | Model | {' | '.join(columns)} | Avg. |",
        "|---|---|" + "---|" * (len(columns) + 1),
    ]
    for row, values in paper.TABLE1.items():
        chosen = [dict(zip(paper.TABLE1_COLUMNS, values))[c] for c in columns]
        average = paper.TABLE1_AVERAGES[row] if len(columns) == len(values) else _average(chosen)
        lines.append(f"| paper | {row} | {_cells(chosen)} | {_cells([average])} |")
    for label, row_values in measured.items():
        ours = [row_values.get(c) for c in columns]
        lines.append(
            f"| ours | {label.removeprefix('ours: ')} | {_cells(ours)} | {_cells([_average(ours)])} |"
        )
    return "\n".join(lines)


def stsb_table(measured: dict[str, dict[str, float]]) -> str:
    """Table 2: STS benchmark test, Spearman × 100."""
    lines = [
        "Table 2: STS benchmark test, Spearman x 100",
        "",
        "| Source | Setting | Model | Spearman |",
        "|---|---|---|---|",
    ]
    lines += [f"| paper | {setting} | {model} | {figure} |" for setting, model, figure in paper.TABLE2]
    for label, row in measured.items():
        if "STSb" in row:
            lines.append(f"| ours | as given | {label.removeprefix('ours: ')} | {row['STSb']:.2f} |")
    return "\n".join(lines)


def transfer_table(measured: dict[str, dict[str, dict]]) -> str:
    """Table 5: SentEval transfer accuracy × 100 (MRPC F1 in its own column)."""
    columns = [c for c in paper.TABLE5_COLUMNS if any(c in row for row in measured.values())]
    lines = [
        "Table 5: SentEval transfer, accuracy x 100 (logistic regression on frozen embeddings)",
        "",
        f"| Source | Model | {' | '.join(columns)} | Avg. | MRPC F1 |",
        "|---|---|" + "---|" * (len(columns) + 2),
    ]
    for row, values in paper.TABLE5.items():
        chosen = [dict(zip(paper.TABLE5_COLUMNS, values))[c] for c in columns]
        average = paper.TABLE5_AVERAGES[row] if len(columns) == len(values) else _average(chosen)
        lines.append(f"| paper | {row} | {_cells(chosen)} | {_cells([average])} | - |")
    for label, tasks in measured.items():
        ours = [tasks[c]["accuracy"] if c in tasks else None for c in columns]
        f1 = tasks.get("MRPC", {}).get("f1")
        lines.append(
            f"| ours | {label.removeprefix('ours: ')} | {_cells(ours)} | {_cells([_average(ours)])} "
            f"| {_cells([f1])} |"
        )
    return "\n".join(lines)
