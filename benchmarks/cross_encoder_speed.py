"""Cross-encoder scoring on the CPU: sbert's CrossEncoder against sentence-transformers' on the same
model and pairs.

The model is the bundled all-MiniLM-L6-v2 with a new one-label head (seeded; an untrained head costs
what a trained one does), saved once and loaded by both libraries from that folder. The pairs are the
STSb test pairs. The runners, in one process, alternating every repeat after a warm-up (the warm-up
includes sbert's one-off graph compilation, timed apart): sbert's default (``precision="auto"``: what
the plan picks on this CPU), sbert's default as planned for the AVX2-only class (what ``auto`` picks
on a CPU with neither native bf16 nor VNNI, ``SBERT_SIMULATE_CPU=avx2``; it computes on this CPU),
sbert in float32 (exact) on padded batches and on packed rows (``pack=True``), and
sentence-transformers' ``predict``. Figures
are medians of the repeats; each ratio is taken per repeat, so that machine noise hits both sides alike.
Each sbert side's scores are compared with sentence-transformers' (max absolute difference, logits).

    flock /tmp/sbert-heavy.lock python benchmarks/cross_encoder_speed.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr
from sentence_transformers import CrossEncoder as TheirCrossEncoder

from alternating import alternating_rates
from sbert import CrossEncoder
from sbert.data import read_stsb
from sbert.inference.cpu import CPU_CLASSES
from sparse_setup import cpu_name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    parser.add_argument("--limit", type=int, default=None, help="only the first N pairs (a quick try)")
    parser.add_argument(
        "--sides", nargs="+", default=None, help="only these sbert sides (e.g. 'sbert default'; default: all)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pairs = [(p.sentence1, p.sentence2) for p in read_stsb("test", args.data_dir)][: args.limit]
    with tempfile.TemporaryDirectory() as folder:
        path = saved_cross_encoder(folder)
        ours = {
            "sbert default": CrossEncoder(path, device="cpu"),
            "sbert default, AVX2 class": CrossEncoder(path, device="cpu"),
            "sbert float32": CrossEncoder(path, device="cpu", precision="float32"),
            "sbert float32 packed": CrossEncoder(path, device="cpu", precision="float32"),
        }
        ours["sbert default, AVX2 class"].cpu_capabilities = CPU_CLASSES["avx2"]  # before it plans
        unknown = set(args.sides or ()) - set(ours)
        if unknown:
            parser.error(f"--sides: no side {', '.join(sorted(unknown))}; choose from {', '.join(ours)}")
        ours = {name: model for name, model in ours.items() if name in (args.sides or ours)}
        theirs = TheirCrossEncoder(path, device="cpu")
        result = measure(args, pairs, ours, theirs)
    report(args, result)


def saved_cross_encoder(folder: str) -> str:
    """The benchmarked model saved under ``folder``: the bundled all-MiniLM-L6-v2 with a new
    one-label head, seed 0; its path."""
    torch.manual_seed(0)
    CrossEncoder.from_pretrained(num_labels=1, device="cpu", precision="float32").save(Path(folder) / "ce")
    return str(Path(folder) / "ce")


def measure(
    args: argparse.Namespace,
    pairs: list[tuple[str, str]],
    ours: dict[str, CrossEncoder],
    theirs: TheirCrossEncoder,
) -> dict[str, object]:
    identity = torch.nn.Identity()
    started, load_before = datetime.now(timezone.utc), os.getloadavg()
    first_call = {}
    for name, model in ours.items():  # the graph compiles on the first call
        start = time.perf_counter()
        scores(model, pairs[:8], args.batch_size, name.endswith("packed"))
        first_call[name] = time.perf_counter() - start
    runners: dict[str, Callable[[], object]] = {
        name: partial(scores, model, pairs, args.batch_size, name.endswith("packed"))
        for name, model in ours.items()
    }
    runners["sentence-transformers"] = lambda: theirs.predict(
        pairs, batch_size=args.batch_size, show_progress_bar=False
    )
    for run in runners.values():  # warm-up
        run()
    rates = alternating_rates(runners, args.repeats, len(pairs))
    quiet = {"batch_size": args.batch_size, "show_progress_bar": False, "activation_fn": identity}
    reference = theirs.predict(pairs, **quiet)
    logits = {
        name: scores(model, pairs, args.batch_size, name.endswith("packed"), identity)
        for name, model in ours.items()
    }
    differences = {name: float(np.abs(values - reference).max()) for name, values in logits.items()}
    agreement = {name: float(spearmanr(values, reference)[0]) for name, values in logits.items()}
    ratios = {name: [a / b for a, b in zip(rates[name], rates["sentence-transformers"])] for name in ours}
    return {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(),
        "load_average_before_after": [load_before[0], os.getloadavg()[0]],
        "threads": args.threads,
        "pairs": len(pairs),
        "batch_size": args.batch_size,
        "plans": {name: plan_text(model, name) for name, model in ours.items()},
        "first_call_seconds": first_call,
        "pairs_per_second": {name: statistics.median(values) for name, values in rates.items()},
        "ratio_median": {name: statistics.median(values) for name, values in ratios.items()},
        "ratios": ratios,
        "max_abs_logit_difference": differences,
        "spearman_with_sentence_transformers": agreement,
        "logit_std": float(reference.std()),
    }


def plan_text(model: CrossEncoder, name: str) -> str:
    packed = ", packed rows" if name.endswith("packed") and model.plan.packs else ""
    return f"{model.plan.precision} on {model.plan.backend}{packed}"


def scores(
    model: CrossEncoder,
    pairs: list[tuple[str, str]],
    batch_size: int,
    pack: bool,
    activation: torch.nn.Module | None = None,
) -> np.ndarray:
    """``predict``'s scores (its activation, or ``activation``), on packed rows where ``pack``."""
    if not pack:
        return model.predict(pairs, batch_size=batch_size, show_progress_bar=False, activation_fn=activation)
    logits = model.logits(pairs, batch_size, show_progress_bar=False, pack=True)  # predict has no pack
    return (activation or model.activation_fn)(logits).numpy()[:, 0]


def report(args: argparse.Namespace, result: dict) -> None:
    print(f"{result['pairs']} STSb test pairs, batch {args.batch_size}, {args.threads} threads")
    for name, rate in result["pairs_per_second"].items():
        plan = result["plans"].get(name, "float32 on torch")
        print(f"  {name:<26} {rate:8.1f} pairs/s  ({plan}, median of {args.repeats})")
    for name, ratios in result["ratios"].items():
        print(
            f"  {name} / sentence-transformers: {result['ratio_median'][name]:.2f} (per repeat "
            + ", ".join(f"{r:.2f}" for r in ratios)
            + f"); max |logit difference| {result['max_abs_logit_difference'][name]:.2g}"
            + f" (logit std {result['logit_std']:.2g}), Spearman with theirs"
            + f" {result['spearman_with_sentence_transformers'][name]:.5f}"
            + f"; first call {result['first_call_seconds'][name]:.1f} s"
        )
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
