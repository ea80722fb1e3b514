"""Encoding speed: sbert against sentence-transformers on the same model and sentences (fp32).

Both sides run in one process, alternating, after a warm-up; each figure is the median of the
repeats, and the ratio is taken per repeat so that machine noise hits both sides alike. sbert runs
float32 on PyTorch unless ``--precision``/``--backend`` say otherwise (``auto auto``: the default
plan, the dense ratio the cross-encoder's is held to).

    python benchmarks/encode_vs_sentence_transformers.py --data-dir ../shared/data --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from datetime import datetime, timezone

import torch
from sentence_transformers import SentenceTransformer

from alternating import alternating_rates
from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.model.hub import bundled_model_path
from sparse_setup import cpu_name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--precision", default="float32", help="sbert's precision (auto: the plan's)")
    parser.add_argument("--backend", default="torch", help="sbert's backend (auto: the plan's)")
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pairs = read_stsb("test", args.data_dir)
    sentences = [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]
    # float32 on PyTorch by default: encode_speed.py compares the engines
    ours = SentenceEncoder.from_pretrained(device="cpu", precision=args.precision, backend=args.backend)
    theirs = SentenceTransformer(str(bundled_model_path()), device="cpu")
    runners = {
        "sbert": lambda: ours.encode(sentences, batch_size=args.batch_size, show_progress_bar=False),
        "sentence-transformers": lambda: theirs.encode(
            sentences, batch_size=args.batch_size, show_progress_bar=False
        ),
    }
    for run in runners.values():  # warm-up
        run()

    started, load_before = datetime.now(timezone.utc), os.getloadavg()
    rates = alternating_rates(runners, args.repeats, len(sentences))
    ratios = [a / b for a, b in zip(rates["sbert"], rates["sentence-transformers"])]

    result = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(),
        "load_average_before_after": [load_before[0], os.getloadavg()[0]],
        "threads": args.threads,
        "plan": f"{ours.precision} on {ours.backend}",
        "sentences": len(sentences),
        "batch_size": args.batch_size,
        "sentences_per_second": {name: statistics.median(values) for name, values in rates.items()},
        "ratio_median": statistics.median(ratios),
        "ratios": ratios,
    }
    print(f"{len(sentences)} STSb test sentences, batch {args.batch_size}, {args.threads} threads")
    print(f"  sbert runs {result['plan']}; sentence-transformers float32 on PyTorch")
    for name, values in rates.items():
        print(f"  {name:<22} {statistics.median(values):8.1f} sentences/s (median of {args.repeats})")
    print(
        f"  ratio sbert / sentence-transformers: {result['ratio_median']:.2f} (per-repeat: "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + ")"
    )
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
