"""PNG charts of a reproduction: our score beside the paper's per table, the seed spread, the speed bars.

Needs matplotlib (``pip install 'sbert[plot]'``); without it the report is written without charts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.figures import Figures
from experiments.findings import concatenation_scores
from sbert.base.files import atomic_path
from sbert.evaluation import paper

OURS, PAPER = "#1f77b4", "#bbbbbb"


def write_charts(results: dict[str, Any], folder: Path) -> list[str]:
    """Write every chart whose figures exist; returns their file names (relative to ``folder``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        return []
    figures = Figures(results)
    written = []
    for name, draw in (
        ("table1_sts.png", _table1),
        ("table2_stsb_seeds.png", _table2),
        ("table5_senteval.png", _table5),
        ("table6_ablation.png", _table6),
        ("table7_speed.png", _table7),
    ):
        figure = draw(figures)
        if figure is None:
            continue
        with atomic_path(folder / name) as temporary:
            figure.savefig(temporary, format="png", dpi=110, bbox_inches="tight")
        written.append(name)
        import matplotlib.pyplot as plt

        plt.close(figure)
    return written


def _paired_bars(
    title: str,
    labels: Sequence[str],
    series: dict[str, Sequence[float | None]],
    colors: Sequence[str],
    ylabel: str,
    log: bool = False,
) -> Any:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(max(6.0, 0.9 * len(labels) * len(series)), 4))
    width = 0.8 / len(series)
    for number, ((name, values), color) in enumerate(zip(series.items(), colors)):
        positions = [i + (number - (len(series) - 1) / 2) * width for i in range(len(labels))]
        heights = [0.0 if v is None else v for v in values]
        axes.bar(positions, heights, width, label=name, color=color)
    axes.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if log:
        axes.set_yscale("log")
    axes.legend()
    return figure


def _table1(figures: Figures) -> Any:
    ours = figures.result("table1/nli")
    glove = figures.result("table1/glove")
    if ours is None:
        return None
    columns = list(paper.TABLE1_COLUMNS)
    series: dict[str, Sequence[float | None]] = {
        "paper: SBERT-NLI-base": paper.TABLE1["SBERT-NLI-base"],
        "ours: bundled → NLI": [ours["spearman"].get(c) for c in columns],
    }
    colors = [PAPER, OURS]
    if glove is not None:
        series["ours: avg. GloVe 6B-50d"] = [glove["spearman"].get(c) for c in columns]
        colors.append("#ff7f0e")
    return _paired_bars("Table 1: STS, Spearman x 100", columns, series, colors, "Spearman x 100")


def _table2(figures: Figures) -> Any:
    import matplotlib.pyplot as plt

    rows = [
        ("stsb", "bi-encoder\nSTSb", "84.67"),
        ("nli-stsb", "bi-encoder\nNLI → STSb", "85.35"),
        ("cross", "cross-encoder\nSTSb", "84.30"),
    ]
    measured = [(label, figures.seeds(prefix), float(published)) for prefix, label, published in rows]
    measured = [row for row in measured if row[1]]
    if not measured:
        return None
    figure, axes = plt.subplots(figsize=(6, 4))
    for position, (_label, values, published) in enumerate(measured):
        axes.scatter(
            [position] * len(values),
            values,
            color=OURS,
            zorder=3,
            label="ours, per seed" if not position else "_",
        )
        axes.hlines(
            published,
            position - 0.3,
            position + 0.3,
            color="black",
            label="paper (BERT-base)" if not position else "_",
        )
    axes.set_xticks(range(len(measured)), [row[0] for row in measured])
    axes.set_ylabel("STSb test Spearman x 100")
    axes.set_title("Table 2: STSb test, seed spread")
    axes.legend()
    return figure


def _table5(figures: Figures) -> Any:
    ours = figures.result("table5/nli")
    if ours is None:
        return None
    columns = list(paper.TABLE5_COLUMNS)
    series: dict[str, Sequence[float | None]] = {
        "paper: SBERT-NLI-base": paper.TABLE5["SBERT-NLI-base"],
        "ours: bundled → NLI": [ours["tasks"].get(c, {}).get("accuracy") for c in columns],
    }
    return _paired_bars("Table 5: SentEval accuracy", columns, series, [PAPER, OURS], "accuracy x 100")


def _table6(figures: Figures) -> Any:
    scores = concatenation_scores(figures)
    if not scores:
        return None
    modes = list(paper.TABLE6_CONCATENATION)
    series: dict[str, Sequence[float | None]] = {
        "paper": [paper.TABLE6_CONCATENATION[m] for m in modes],
        "ours": [scores.get(m) for m in modes],
    }
    labels = [f"({m})" for m in modes]
    return _paired_bars(
        "Table 6: concatenation, STSb dev Spearman", labels, series, [PAPER, OURS], "Spearman x 100"
    )


def _table7(figures: Figures) -> Any:
    speed = figures.result("table7/speed")
    if speed is None:
        return None
    labels = list(paper.TABLE7_CPU) + [f"ours: {name}" for name in speed["sentences_per_second"]]
    rates = list(paper.TABLE7_CPU.values()) + list(speed["sentences_per_second"].values())
    paper_rows = len(paper.TABLE7_CPU)
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    colors = [PAPER] * paper_rows + [OURS] * (len(rates) - paper_rows)
    axes.barh(range(len(rates)), rates, color=colors)
    axes.set_yticks(range(len(labels)), labels)
    axes.set_xscale("log")
    axes.set_xlabel("sentences per second (log scale)")
    axes.set_title("Table 7: CPU speed (grey: paper, BERT-base; blue: ours, MiniLM-L6)")
    axes.invert_yaxis()
    return figure
