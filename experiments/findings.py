"""The paper's findings, each checked against our figures: a claim, its numbers, and a verdict."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.cells import CONCATENATIONS, PAPER_MODE, concatenation_slug
from experiments.figures import Figures, escape, mean_std

# What "about equal" and "much better" mean in the verdicts, in Spearman or accuracy points × 100.
SAME_WITHIN = 1.5
MUCH_BETTER_BY = 3.0
ORDERS_OF_MAGNITUDE = 100.0

READING_THE_VERDICTS = """\
How to read the verdicts: every model here starts from all-MiniLM-L6-v2, which is already a trained
sentence encoder (STSb dev 86.72 before any training here), while the paper starts from raw BERT.
Training it with a fresh classifier on a few thousand SNLI pairs mostly measures how much each
setting disturbs an already good vector space; none of the NLI-trained models beats the untrained
one on STSb dev. So the classification-objective rows of Table 6 do not test what the paper tested,
and their verdicts say little about its claims. The regression rows, Tables 1, 2 and 7 and the cost
argument do compare like with like (up to the smaller network).
"""


@dataclass
class Finding:
    claim: str
    paper: str
    ours: str
    verdict: str  # "confirmed", "not confirmed", "partly confirmed" or "not measured"


def findings(figures: Figures) -> list[Finding]:
    return [
        _sbert_beats_glove_and_cls(figures),
        _pooling_under_regression(figures),
        _pooling_under_classification(figures),
        _best_concatenation(figures),
        _product_hurts(figures),
        _cross_encoder_trade_off(figures),
    ]


def _verdict(*checks: bool) -> str:
    if all(checks):
        return "confirmed"
    return "partly confirmed" if any(checks) else "not confirmed"


def _sbert_beats_glove_and_cls(figures: Figures) -> Finding:
    claim = "SBERT ≫ averaged GloVe and the CLS vector (Table 1, STS average)"
    sbert, glove = figures.sts_average("table1/bundled-mean"), figures.sts_average("table1/glove")
    cls, nli = figures.sts_average("table1/bundled-cls"), figures.sts_average("table1/nli")
    paper_text = "SBERT-NLI-base 74.89 vs GloVe 61.32, CLS 29.19"
    if sbert is None or glove is None or cls is None:
        return Finding(claim, paper_text, "not all three rows measured", "not measured")
    ours = f"all-MiniLM-L6-v2 (an SBERT network) {sbert:.2f} vs GloVe 6B-50d {glove:.2f}, its CLS vector {cls:.2f}"
    if nli is not None:
        ours += f"; after our NLI training {nli:.2f}"
    return Finding(
        claim, paper_text, ours, _verdict(sbert - glove >= MUCH_BETTER_BY, sbert - cls >= MUCH_BETTER_BY)
    )


def _pooling_under_regression(figures: Figures) -> Finding:
    claim = "Regression objective: MEAN ≈ CLS ≫ MAX (Table 6, STSb dev)"
    mean, cls, max_ = (figures.value(f"table6/stsb-{p}", "dev") for p in ("mean", "cls", "max"))
    paper_text = "MEAN 87.44, CLS 86.62, MAX 69.92"
    if None in (mean, cls, max_):
        return Finding(claim, paper_text, "not all three poolings measured", "not measured")
    assert mean is not None and cls is not None and max_ is not None
    ours = f"MEAN {mean:.2f}, CLS {cls:.2f}, MAX {max_:.2f}"
    verdict = _verdict(abs(mean - cls) <= SAME_WITHIN, min(mean, cls) - max_ >= MUCH_BETTER_BY)
    return Finding(claim, paper_text, ours, verdict)


def _pooling_under_classification(figures: Figures) -> Finding:
    claim = "Classification objective: the pooling matters little (Table 6, STSb dev)"
    scores = {p: figures.value(f"table6/nli-{p}", "dev") for p in ("mean", "cls", "max")}
    paper_text = "MEAN 80.78, MAX 79.07, CLS 79.80 (spread 1.71)"
    if None in scores.values():
        return Finding(claim, paper_text, "not all three poolings measured", "not measured")
    values = [v for v in scores.values() if v is not None]
    spread = max(values) - min(values)
    ours = (
        ", ".join(f"{p.upper()} {v:.2f}" for p, v in scores.items() if v is not None)
        + f" (spread {spread:.2f})"
    )
    return Finding(claim, paper_text, ours, _verdict(spread <= 2 * SAME_WITHIN))


def concatenation_scores(figures: Figures) -> dict[str, float]:
    scores = {}
    for mode in CONCATENATIONS:
        cell = "table6/nli-mean" if mode == PAPER_MODE else f"table6/concat-{concatenation_slug(mode)}"
        value = figures.value(cell, "dev")
        if value is not None:
            scores[mode] = value
    return scores


def _best_concatenation(figures: Figures) -> Finding:
    claim = "(u, v, |u−v|) is the best concatenation (Table 6)"
    scores = concatenation_scores(figures)
    paper_text = "(u, v, |u−v|) 80.78, next (u, v, |u−v|, u*v) 80.44"
    if len(scores) < 7:
        return Finding(claim, paper_text, f"{len(scores)} of 7 modes measured", "not measured")
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    ours = ", ".join(f"({mode}) {score:.2f}" for mode, score in ranked[:3])
    best, paper_mode = ranked[0][1], scores["u,v,|u-v|"]
    near = best - paper_mode <= SAME_WITHIN / 3
    verdict = (
        "confirmed" if ranked[0][0] == "u,v,|u-v|" else ("partly confirmed" if near else "not confirmed")
    )
    return Finding(claim, paper_text, "best: " + ours, verdict)


def _product_hurts(figures: Figures) -> Finding:
    claim = "Adding u*v hurts (Table 6)"
    scores = concatenation_scores(figures)
    paper_text = "(u, v, |u−v|) 80.78 → with u*v 80.44; (u, v) 66.04 → (u, v, u*v) 77.44"
    needed = ("u,v,|u-v|", "u,v,|u-v|,u*v")
    if any(mode not in scores for mode in needed):
        return Finding(claim, paper_text, "not measured", "not measured")
    without, with_product = scores["u,v,|u-v|"], scores["u,v,|u-v|,u*v"]
    ours = f"(u, v, |u−v|) {without:.2f} → with u*v {with_product:.2f}"
    return Finding(claim, paper_text, ours, _verdict(with_product < without))


def _cross_encoder_trade_off(figures: Figures) -> Finding:
    claim = "The cross-encoder is more accurate but orders of magnitude slower"
    cross, bi = mean_std(figures.seeds("cross")), mean_std(figures.seeds("stsb"))
    cost = figures.result("table7/cost")
    paper_text = (
        "STSb 88.33 (BERT-NLI-STSb-base cross-encoder) vs 85.35 (SBERT-NLI-STSb-base), but STSb only 84.30 "
        "vs 84.67; 65 h vs 5 s for 10,000 sentences"
    )
    if cross is None or bi is None or cost is None:
        return Finding(claim, paper_text, "not all of it measured", "not measured")
    ours = (
        f"STSb {cross[0]:.2f} ± {cross[1]:.2f} vs bi-encoder {bi[0]:.2f} ± {bi[1]:.2f}; "
        f"{cost['cross_hours_extrapolated']:.1f} h (extrapolated) vs {cost['bi_seconds_measured']:.1f} s, "
        f"{cost['ratio']:,.0f}×"
    )
    return Finding(claim, paper_text, ours, _verdict(cross[0] > bi[0], cost["ratio"] >= ORDERS_OF_MAGNITUDE))


def findings_table(figures: Figures) -> str:
    lines = [
        "## The paper's findings, checked",
        "",
        f"'≈' means within {SAME_WITHIN} points, '≫' at least {MUCH_BETTER_BY} points, "
        f"'orders of magnitude' at least {ORDERS_OF_MAGNITUDE:.0f}×.",
        "",
        "| Finding | Paper | Ours | Verdict |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {escape(f.claim)} | {escape(f.paper)} | {escape(f.ours)} | **{f.verdict}** |"
        for f in findings(figures)
    ]
    return "\n".join([*lines, "", READING_THE_VERDICTS])


# The paper's rows that our rows can be read against, in Tables 1 and 5.
