"""Packed rows against padded batches on the small groups a server merges: ``encode(pack=True)``.

First the largest difference between packed and padded vectors of the same sentences (should be
float32 rounding). Then 1,024 STSb test sentences encoded in groups of 16, 32 and 64 (what ``sbert
serve`` merges at that concurrency), packed and padded (batches of at most half a group cut at the
cheapest points, as the server did before packing), against one ``encode()`` of all 1,024,
alternating, median of the repeats.

    flock /tmp/sbert-heavy.lock python benchmarks/packed_groups.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import platform
import statistics
from datetime import datetime, timezone

import numpy as np

from alternating import alternating_rates
from sbert import SentenceEncoder
from sbert.base.batching import BATCH_COST_TOKENS
from sbert.data import read_stsb

GROUPS = (16, 32, 64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    model = SentenceEncoder.from_pretrained()
    pairs = read_stsb("test", args.data_dir)
    sentences = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs])[:1024]
    difference = np.abs(model.encode(sentences, pack=True) - model.encode(sentences)).max()
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}")
    print(f"{model.backend} {model.precision}; max abs difference, packed vs padded: {difference:.1e}")

    def in_groups(group: int, pack: bool) -> None:
        for start in range(0, len(sentences), group):
            texts = sentences[start : start + group]
            model.encode(
                texts,
                batch_size=max(1, len(texts) // 2),
                batch_cost_tokens=BATCH_COST_TOKENS,
                pack=pack,
                show_progress_bar=False,
            )

    runners = {"encode(1024)": lambda: model.encode(sentences, show_progress_bar=False)}
    for group in GROUPS:
        runners[f"groups of {group}, padded"] = lambda g=group: in_groups(g, pack=False)
        runners[f"groups of {group}, packed"] = lambda g=group: in_groups(g, pack=True)
    rates = alternating_rates(runners, args.repeats, len(sentences))
    direct = statistics.median(rates["encode(1024)"])
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name}: {rate:.0f} sentences/s, {rate / direct:.2f}× of one encode()")


if __name__ == "__main__":
    main()
