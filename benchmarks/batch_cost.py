"""What one forward pass costs beyond its tokens: the ``batch_cost_tokens`` that ``sbert serve`` uses.

A forward pass of b sentences padded to s tokens takes about ``fixed + per_token · b · s``: the fixed
part is reading every weight once (the bundled model's 90 MB do not fit in a cache), the rest grows
with the padded tokens. This times one OpenVINO inference request (one stream, one thread: what each
core runs when the server splits a merged batch) on shapes from (1, 8) to (32, 32), fits the line
by least squares and prints ``fixed / per_token``, the cost of a batch in tokens. Then it shows what
the cuts do: padded tokens (and the modelled cost) of random groups of STSb test sentences in
fixed-size batches against :func:`sbert.base.batching.cheapest_cuts`. What the cuts give a server's
groups, against packed rows, is ``benchmarks/packed_groups.py``.

    flock /tmp/sbert-heavy.lock python benchmarks/batch_cost.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from sbert import SentenceEncoder
from sbert.base.batching import length_sorted_batches
from sbert.data import read_stsb

SHAPES = [(b, s) for b in (1, 2, 4, 8, 16, 32) for s in (8, 16, 32)]


def time_shapes(model: SentenceEncoder, repeats: int) -> dict[tuple[int, int], float]:
    """Median seconds of one inference of each (batch, seq) shape on one OpenVINO request."""
    model.encode(["warm up"], show_progress_bar=False)
    engine = model._openvino_engine(model.precision)
    if engine is None:
        raise SystemExit("this benchmark times the OpenVINO engine, which could not be built here")
    request = engine.requests[0]
    seconds = {}
    for b, s in SHAPES:
        feeds = {"input_ids": np.full((b, s), 1000, np.int64), "attention_mask": np.ones((b, s), np.int64)}
        request.infer(feeds)  # the first run of a shape prepares it
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            request.infer(feeds)
            times.append(time.perf_counter() - start)
        seconds[(b, s)] = statistics.median(times)
    return seconds


def padded(lengths: np.ndarray, batches: list[np.ndarray]) -> int:
    return sum(len(batch) * int(lengths[batch].max()) for batch in batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    model = SentenceEncoder.from_pretrained()
    seconds = time_shapes(model, args.repeats)
    tokens = np.array([b * s for b, s in seconds], dtype=np.float64)
    times = np.array(list(seconds.values()))
    per_token, fixed = np.polyfit(tokens, times, 1)
    for (b, s), t in seconds.items():
        print(f"batch {b:2d} × {s:2d} tokens: {1000 * t:6.2f} ms")
    cost_tokens = fixed / per_token
    print(
        f"fit: {1000 * fixed:.2f} ms + {1e6 * per_token:.0f} µs a padded token; a batch costs {cost_tokens:.1f} tokens"
    )

    pairs = read_stsb("test", args.data_dir)
    sentences = [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]
    lengths = np.array(model.token_ids(sentences).lengths)
    rng = np.random.default_rng(0)
    print("\ngroup | fixed-size batches: padded/real, cost | cheapest cuts: padded/real, cost")
    for group, size in ((8, 4), (16, 8), (32, 16), (64, 32)):
        rows = []
        for _ in range(200):
            sample = lengths[rng.choice(len(lengths), group, replace=False)]
            for cost in (None, round(cost_tokens)):
                batches = length_sorted_batches(sample, size, batch_cost_tokens=cost)
                tokens_padded = padded(sample, batches)
                rows.append(
                    (cost, tokens_padded / sample.sum(), fixed * len(batches) + per_token * tokens_padded)
                )
        summary = []
        for cost in (None, round(cost_tokens)):
            mine = [(ratio, total) for c, ratio, total in rows if c == cost]
            summary.append(
                f"{np.mean([r for r, _ in mine]):.2f}, {1000 * np.mean([t for _, t in mine]):.1f} ms"
            )
        print(f"{group:5d} (batches of ≤ {size}) | {summary[0]} | {summary[1]}")


if __name__ == "__main__":
    main()
