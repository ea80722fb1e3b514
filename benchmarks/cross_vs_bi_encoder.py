"""The paper's cost argument on this machine: a cross-encoder scores pairs, a bi-encoder embeds sentences.

Both sides use the same base weights (the bundled all-MiniLM-L6-v2, fp32) and run in one process,
alternating, after a warm-up; figures are medians over ``--repeats``. The cross-encoder's head is
new and untrained: a linear layer on the pooled ``[CLS]`` vector, whose cost is nothing next to the
6 transformer layers, so its speed is that of a trained one.

1. Throughput on the same sentences, the STSb test pairs: cross-encoder pairs per second (each pair
   is one forward pass of ``[CLS] A [SEP] B [SEP]``) against bi-encoder sentences per second.
2. The most similar pair among 10,000 sentences (the first 10,000 distinct SNLI test/dev sentences):
   the cross-encoder must score n·(n−1)/2 = 49,995,000 pairs, so its time is EXTRAPOLATED from the
   measured pairs per second (running it would take hours); the bi-encoder side is MEASURED: encode
   the 10,000 sentences, then ``paraphrase_mining``. The paper: 65 hours against about 5 seconds
   (BERT-base, V100).

    flock /tmp/sbert-heavy.lock python benchmarks/cross_vs_bi_encoder.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import date

import torch

from alternating import alternating_order
from sbert import SentenceEncoder
from sbert.applications.mining import paraphrase_mining
from sbert.cross_encoder import CrossEncoder
from sbert.data import distinct_snli_sentences, read_stsb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sentences", type=int, default=10_000, help="size of the most-similar-pair task")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    stsb = read_stsb("test", args.data_dir)
    pairs = [(p.sentence1, p.sentence2) for p in stsb]
    sentences = [s for pair in pairs for s in pair]
    torch.manual_seed(0)
    # Both sides on PyTorch float32, as the figures in docs/benchmarks.md were measured;
    # cross_encoder_speed.py measures the cross-encoder's engines.
    cross = CrossEncoder.from_pretrained(num_labels=1, device="cpu", precision="float32", backend="torch")
    bi = SentenceEncoder.from_pretrained(
        device="cpu", precision="float32", backend="torch"
    )  # PyTorch engine; encode_speed.py compares engines
    mining_sentences = distinct_snli_sentences(args.sentences, args.data_dir)
    n = len(mining_sentences)
    all_pairs = n * (n - 1) // 2

    def mine() -> None:
        vectors = bi.encode(mining_sentences, batch_size=args.batch_size, show_progress_bar=False)
        paraphrase_mining(vectors, top_k=10, max_pairs=1)

    runners = {
        "cross": lambda: cross.predict(pairs, batch_size=args.batch_size, show_progress_bar=False),
        "bi": lambda: bi.encode(sentences, batch_size=args.batch_size, show_progress_bar=False),
        "bi_mining": mine,
    }
    for run in runners.values():  # warm-up
        run()
    # All three in every repeat, order alternating, so that load from other processes hits them alike.
    seconds: dict[str, list[float]] = {name: [] for name in runners}
    for repeat in range(args.repeats):
        for name in alternating_order(list(runners), repeat):
            start = time.perf_counter()
            runners[name]()
            seconds[name].append(time.perf_counter() - start)
    pairs_per_second = len(pairs) / statistics.median(seconds["cross"])
    sentences_per_second = len(sentences) / statistics.median(seconds["bi"])
    cross_hours = all_pairs / pairs_per_second / 3600
    bi_seconds = statistics.median(seconds["bi_mining"])
    # Per repeat: extrapolated cross-encoder time over measured bi-encoder time.
    ratios = [
        all_pairs / (len(pairs) / cross) / bi for cross, bi in zip(seconds["cross"], seconds["bi_mining"])
    ]
    vectors = bi.encode(mining_sentences, batch_size=args.batch_size, show_progress_bar=False)
    best = paraphrase_mining(vectors, top_k=10, max_pairs=1)[0]

    print(f"bundled all-MiniLM-L6-v2, fp32, {args.threads} threads, batch {args.batch_size}")
    print(
        f"  STSb test: cross-encoder {pairs_per_second:.1f} pairs/s ({len(pairs)} pairs), "
        f"bi-encoder {sentences_per_second:.1f} sentences/s ({len(sentences)} sentences) "
        f"(medians of {args.repeats})"
    )
    print(
        f"  most similar pair among {n} sentences: cross-encoder {all_pairs:,} pairs / "
        f"{pairs_per_second:.1f} pairs/s = {cross_hours:.1f} hours (extrapolated); bi-encoder encode + mine "
        f"{bi_seconds:.1f} s (measured, median of {args.repeats}); ratio {statistics.median(ratios):,.0f}x "
        "(per repeat: " + ", ".join(f"{r:,.0f}" for r in ratios) + ")"
    )
    print(f"  best pair {best.score:.3f}: {mining_sentences[best.i]!r} <-> {mining_sentences[best.j]!r}")
    if args.output:
        result = {
            "date": date.today().isoformat(),
            "cpu": platform.processor() or platform.machine(),
            "threads": args.threads,
            "batch_size": args.batch_size,
            "cross_pairs_per_second": pairs_per_second,
            "bi_sentences_per_second": sentences_per_second,
            "seconds": seconds,
            "mining_sentences": n,
            "cross_hours_extrapolated": cross_hours,
            "bi_seconds_measured": bi_seconds,
            "ratios": ratios,
        }
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
