"""Encoding speed: sbert against sentence-transformers on the same model and sentences (fp32).

Both sides run in one process, alternating, after a warm-up; each figure is the median of the
repeats, and the ratio is taken per repeat so that machine noise hits both sides alike.

    python benchmarks/encode_vs_sentence_transformers.py --data-dir ../shared/data --repeats 5
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from datetime import date

import torch
from sentence_transformers import SentenceTransformer

from alternating import alternating_rates
from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.model.hub import bundled_model_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pairs = read_stsb("test", args.data_dir)
    sentences = [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]
    ours = SentenceEncoder.from_pretrained(
        device="cpu", precision="float32", backend="torch"
    )  # PyTorch engine; encode_speed.py compares engines
    theirs = SentenceTransformer(str(bundled_model_path()), device="cpu")
    runners = {
        "sbert": lambda: ours.encode(sentences, batch_size=args.batch_size, show_progress_bar=False),
        "sentence-transformers": lambda: theirs.encode(
            sentences, batch_size=args.batch_size, show_progress_bar=False
        ),
    }
    for run in runners.values():  # warm-up
        run()

    rates = alternating_rates(runners, args.repeats, len(sentences))
    ratios = [a / b for a, b in zip(rates["sbert"], rates["sentence-transformers"])]

    result = {
        "date": date.today().isoformat(),
        "cpu": platform.processor() or platform.machine(),
        "threads": args.threads,
        "sentences": len(sentences),
        "batch_size": args.batch_size,
        "sentences_per_second": {name: statistics.median(values) for name, values in rates.items()},
        "ratio_median": statistics.median(ratios),
        "ratios": ratios,
    }
    print(f"{len(sentences)} STSb test sentences, batch {args.batch_size}, {args.threads} threads, fp32")
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
