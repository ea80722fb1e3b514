"""Does a cap on padded tokens per batch speed up encoding? Batch sizes and token budgets compared.

The default precision and backend on the STSb test sentences and on the 10,000 mixed-length ones of
``encode_speed.py``: sentences/s for each (batch size, ``max_tokens``), in one run, alternating
order, after a warm-up, median of the repeats.

    flock /tmp/sbert-heavy.lock python benchmarks/token_budget.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import statistics

from alternating import alternating_rates
from encode_speed import mixed_sentences
from sbert import SentenceEncoder
from sbert.base.batching import length_sorted_batches
from sbert.data import read_stsb

SETTINGS = [(32, None), (64, None), (32, 512), (128, 2048), (256, 4096)]  # (batch_size, max_tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pairs = read_stsb("test", args.data_dir)
    sets = {
        "STSb test": [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs],
        "10000 mixed": mixed_sentences(args.data_dir, 10_000),
    }
    model = SentenceEncoder.from_pretrained(device="cpu")
    print(f"{model.precision} ({model.backend}), median of {args.repeats} repeats, sentences/s")
    print("| batch size, max_tokens | " + " | ".join(sets) + " |")
    print("|---" * (len(sets) + 1) + "|")
    labels = {f"{size}, {cap or 'no cap'}": (size, cap) for size, cap in SETTINGS}
    rates = {}
    for name, texts in sets.items():
        runners = {
            label: (
                lambda b=size, t=cap, s=texts: model.encode(
                    s, batch_size=b, max_tokens=t, show_progress_bar=False
                )
            )
            for label, (size, cap) in labels.items()
        }
        for run in runners.values():
            run()  # warm-up
        rates[name] = alternating_rates(runners, args.repeats, len(texts))
    for name, texts in sets.items():
        lengths = model.token_ids(texts).lengths
        padded = sum(len(b) * max(lengths[i] for i in b) for b in length_sorted_batches(lengths, 32))
        print(
            f"{name}: {sum(lengths) / len(texts):.1f} real and {padded / len(texts):.1f} padded tokens per sentence, batch 32"
        )
    for label in labels:
        print(
            f"| {label} | "
            + " | ".join(f"{statistics.median(rates[name][label]):.0f}" for name in sets)
            + " |"
        )


if __name__ == "__main__":
    main()
