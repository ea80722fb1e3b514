"""Markdown tables of measured figures beside the paper's: Tables 1, 2 and 5, and STS12-16 three ways.

Every table says the precision the vectors were computed in; the transfer table says its protocol.

Example:
    >>> print(stsb_table({"ours: m": {"STSb": 82.03}}, "float32").splitlines()[-1])
    | ours | as given | m | 82.03 |
"""

from __future__ import annotations

from collections.abc import Sequence

from sbert.evaluation import paper

SUBSET_SETS = ("STS12", "STS13", "STS14", "STS15", "STS16")
SUMMARY_LABELS = {
    "all": "pooled (the paper's; SimCSE, MTEB)",
    "subset_mean": 'mean of subsets (SentEval "mean")',
    "weighted_mean": 'pair-weighted mean of subsets (SentEval "wmean")',
}
PROTOCOL_LABELS = {
    "senteval": "protocol senteval: SentEval's default, comparable with the paper",
    "fast": "protocol fast: scikit-learn, not comparable with the paper",
}


def _cells(values: Sequence[float | None], digits: int = 2) -> str:
    return " | ".join("-" if v is None else f"{v:.{digits}f}" for v in values)


def _average(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type, misc]


def _name(label: str) -> str:
    return label.removeprefix("ours: ")


def _paper_rows(
    table: dict[str, tuple[float, ...]],
    all_columns: Sequence[str],
    averages: dict[str, float],
    columns: Sequence[str],
    extra: str,
) -> list[str]:
    """The paper's rows narrowed to ``columns``; its printed average when no column is left out."""
    lines = []
    for row, values in table.items():
        chosen = [dict(zip(all_columns, values))[c] for c in columns]
        average = averages[row] if len(columns) == len(values) else _average(chosen)
        lines.append(f"| paper | {row} | {_cells(chosen)} | {_cells([average])} |{extra}")
    return lines


def sts_table(measured: dict[str, dict[str, float]], precision: str) -> str:
    """Table 1: Spearman × 100 (cosine) per STS set, STS12-16 pooled as the paper."""
    columns = [c for c in paper.TABLE1_COLUMNS if any(c in row for row in measured.values())]
    lines = [
        f"Table 1: STS, Spearman x 100 of cosine similarity (STS12-16: all subsets pooled); precision {precision}",
        "",
        f"| Source | Model | {' | '.join(columns)} | Avg. |",
        "|---|---|" + "---|" * (len(columns) + 1),
    ]
    lines += _paper_rows(paper.TABLE1, paper.TABLE1_COLUMNS, paper.TABLE1_AVERAGES, columns, "")
    for label, row_values in measured.items():
        ours = [row_values.get(c) for c in columns]
        lines.append(f"| ours | {_name(label)} | {_cells(ours)} | {_cells([_average(ours)])} |")
    return "\n".join(lines)


def sts_summaries_table(results: dict[str, dict[str, dict]], precision: str) -> str:
    """STS12-16 three ways per model: pooled, SentEval's mean and weighted mean of the subsets."""
    columns = [c for c in SUBSET_SETS if any(c in sets for sets in results.values())]
    lines = [
        f"STS12-16 summarised three ways, Spearman x 100 of cosine similarity; precision {precision}",
        "",
        f"| Model | Summary | {' | '.join(columns)} | Avg. |",
        "|---|---|" + "---|" * (len(columns) + 1),
    ]
    for label, sets in results.items():
        for summary, description in SUMMARY_LABELS.items():
            values = [sets[c][summary]["spearman_cosine"] if c in sets else None for c in columns]
            lines.append(
                f"| {_name(label)} | {description} | {_cells(values)} | {_cells([_average(values)])} |"
            )
    return "\n".join(lines)


def stsb_table(measured: dict[str, dict[str, float]], precision: str) -> str:
    """Table 2: STS benchmark test, Spearman × 100."""
    lines = [
        f"Table 2: STS benchmark test, Spearman x 100; precision {precision}",
        "",
        "| Source | Setting | Model | Spearman |",
        "|---|---|---|---|",
    ]
    lines += [f"| paper | {setting} | {model} | {figure} |" for setting, model, figure in paper.TABLE2]
    for label, row in measured.items():
        if "STSb" in row:
            lines.append(f"| ours | as given | {_name(label)} | {row['STSb']:.2f} |")
    return "\n".join(lines)


def transfer_table(measured: dict[str, dict[str, dict]], precision: str, protocol: str) -> str:
    """Table 5: SentEval transfer accuracy × 100 (MRPC F1 in its own column)."""
    columns = [c for c in paper.TABLE5_COLUMNS if any(c in row for row in measured.values())]
    lines = [
        "Table 5: SentEval transfer, accuracy x 100 (logistic regression on frozen embeddings; "
        f"{PROTOCOL_LABELS.get(protocol, 'protocol ' + protocol)}); precision {precision}",
        "",
        f"| Source | Model | {' | '.join(columns)} | Avg. | MRPC F1 |",
        "|---|---|" + "---|" * (len(columns) + 2),
    ]
    lines += _paper_rows(paper.TABLE5, paper.TABLE5_COLUMNS, paper.TABLE5_AVERAGES, columns, " - |")
    for label, tasks in measured.items():
        ours = [tasks[c]["accuracy"] if c in tasks else None for c in columns]
        f1 = tasks.get("MRPC", {}).get("f1")
        lines.append(
            f"| ours | {_name(label)} | {_cells(ours)} | {_cells([_average(ours)])} | {_cells([f1])} |"
        )
    return "\n".join(lines)


def format_report(
    results: dict[str, dict], seconds: dict[str, dict[str, float]], precision: str, protocol: str
) -> str:
    """Every table for ``{label: {"sts": ..., "senteval": ...}}`` results, then the wall times."""
    from sbert.evaluation.sts import spearman_cosine

    parts = []
    sts_results = {label: r["sts"] for label, r in results.items() if "sts" in r}
    sts = {label: spearman_cosine(r) for label, r in sts_results.items()}
    if sts:
        parts.append(sts_table(sts, precision))
        if any(name in SUBSET_SETS for row in sts.values() for name in row):
            parts.append(sts_summaries_table(sts_results, precision))
        if any("STSb" in row for row in sts.values()):
            parts.append(stsb_table(sts, precision))
    transfer = {label: r["senteval"] for label, r in results.items() if "senteval" in r}
    if transfer:
        parts.append(transfer_table(transfer, precision, protocol))
    timing = ["| Model | sts (s) | senteval (s) |", "|---|---|---|"]
    for label, row in seconds.items():
        timing.append(f"| {label} | {row.get('sts', '-')} | {row.get('senteval', '-')} |")
    parts.append("Wall time\n\n" + "\n".join(timing))
    return "\n\n".join(parts)
