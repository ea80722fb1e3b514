"""The printed report of ``benchmarks/gpu.py``: the table, each section's figures, and issue 43's
done-means, each met or NOT met."""

from __future__ import annotations

from typing import Any

from gpu_oracle import BOUNDS

BATCH_SIZES = (32, 256, 1024)  # the speed table's batch sizes (benchmarks/gpu.py)


def print_table(result: dict[str, Any]) -> None:
    print(f"\n{result['device']}, {result['date']}, {result['weights']}, {result['versions']}")
    print(f"host: {result['host']}; {result['sentences_a_pass']:,} sentences a pass")
    print("| row | batch | sentences/s | STSb Spearman | worst cosine distance to ST fp32 |")
    print("|---|---|---|---|---|")
    for row in result.get("speed", []):
        print(
            f"| {row['row']} | {row['batch_size']} | {row['sentences_per_s']:,.0f} | "
            f"{row['spearman']:.2f} | {row['worst_cosine_distance']:.1e} |"
        )
    for name, value in result.get("oracle", {}).items():
        print(f"oracle {name}: {value:.1e}" if isinstance(value, float) else f"oracle {name}: {value}")
    for name, rate in (result.get("tokenizing", {}) | result.get("limits", {})).items():
        print(f"{name}: {rate:,.0f} sentences/s")
    for name, times in result.get("latency_one_query", {}).items():
        ran = {key: value for key, value in times.items() if not key.endswith("_ms")}
        print(f"one query, {name}: p50 {times['p50_ms']:.2f} ms, p99 {times['p99_ms']:.2f} ms {ran or ''}")
    for name in (key for key in result if key.endswith("_failed")):
        print(f"{name}: {result[name]}")
    for line in done_means(result):
        print(line)
    print(f"{result['seconds']:.0f} s in all")


def done_means(result: dict[str, Any]) -> list[str]:
    """Issue 43's done-means, each as measured here: a line each, saying met or not."""
    lines = []
    checked = result.get("oracle")
    if "oracle_failed" in result:
        lines.append(_verdict(False, f"the GPU paths' oracle did not run: {result['oracle_failed']}"))
    if checked:
        bad = [k for k, v in checked.items() if isinstance(v, str) and v.startswith("failed")]
        lines.append(
            _verdict(
                checked["all_within_bounds"],
                f"every GPU path in 3 dtypes within its bound {BOUNDS}; failed: {bad or 'none'}",
            )
        )
    # Before the speed table's lines: --sections limits runs without it.
    limits = result.get("limits", {})
    on_ids = next((v for k, v in limits.items() if k.startswith("sbert_pipeline_on_ids")), None)
    on_texts = next((v for k, v in limits.items() if k.endswith("_default")), None)
    if on_ids and on_texts:
        lines.append(
            _verdict(
                on_texts >= 0.9 * on_ids,
                f"pipeline on texts {on_texts:,.0f} within 10% of on token ids {on_ids:,.0f} sentences/s",
            )
        )
    speed = result.get("speed", [])
    if not speed:
        return [*lines, "done-means: no speed table"]
    rate = {(row["row"], row["batch_size"]): row["sentences_per_s"] for row in speed}
    quality = {row["row"]: row for row in speed}
    auto = next(row["row"] for row in speed if row["row"].startswith("sbert auto"))
    best = max(rate[(auto, batch)] for batch in BATCH_SIZES)
    at_32 = rate[(auto, 32)] / rate[("ST fp32", 32)]
    slower = [batch for batch in BATCH_SIZES if rate[(auto, batch)] < rate[("sbert float32", batch)]]
    stsb = abs(quality[auto]["spearman"] - quality["ST fp32"]["spearman"])
    distance = quality[auto]["worst_cosine_distance"]
    bound = BOUNDS.get(auto.removeprefix("sbert auto (").rstrip(")"), BOUNDS["float16"])
    lines += [
        _verdict(best >= 100_000, f"sbert default at its best batch: {best:,.0f} sentences/s (≥ 100,000)"),
        _verdict(at_32 >= 10, f"sbert default at batch 32: {at_32:.1f}× sentence-transformers fp32 (≥ 10×)"),
        _verdict(not slower, f"sbert default slower than its float32 at batch sizes: {slower or 'none'}"),
        _verdict(
            stsb <= 0.05,
            f"sbert default STSb {quality[auto]['spearman']:.2f}, ST fp32's within {stsb:.3f} (≤ 0.05)",
        ),
        _verdict(distance <= bound, f"sbert default worst cosine distance {distance:.1e} (≤ {bound:.0e})"),
    ]
    latency = result.get("latency_one_query")
    if latency:
        ours, theirs = latency[auto]["p50_ms"], latency["ST fp32"]["p50_ms"]
        exact = latency["sbert float32"]["p50_ms"]
        lines.append(
            _verdict(ours < theirs, f"one query p50: sbert default {ours:.2f} ms, ST fp32 {theirs:.2f} ms")
        )
        lines.append(
            _verdict(
                ours <= 1.1 * exact,
                f"one query p50: sbert default {ours:.2f} ms within 10% of sbert float32 {exact:.2f} ms",
            )
        )
    return lines


def _verdict(met: bool, what: str) -> str:
    return f"done-means {'met' if met else 'NOT met'}: {what}"
