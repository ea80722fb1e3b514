"""Paraphrase mining of 10,000 sentences end to end (encode + mine) with the bundled model.

The paper (section 1): finding the most similar pair in 10,000 sentences takes about 5 s with SBERT
on a V100 (BERT-base), against about 65 hours of BERT cross-encoder inference. Here: the first
10,000 distinct sentences of SNLI test then dev (premises and hypotheses in file order), the bundled
all-MiniLM-L6-v2 (6 layers, 384-d) on this machine's CPU threads, in sbert's ``float32`` and
``auto`` precisions (``auto`` is bf16 on CPUs with native bf16). The STSb test Spearman of each precision is printed beside
its time, so that the speed is never quoted without its cost. One warm-up run each, then
``--repeats`` timed runs, the precisions alternating; the median is reported.

    flock /tmp/sbert-heavy.lock python benchmarks/paraphrase_mining.py --data-dir ../shared/data
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
from sbert.data import distinct_snli_sentences, read_stsb
from sbert.evaluation import SimilarityEvaluator


def load_model(precision: str) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(
        device="cpu", precision=precision, backend="torch"
    )  # PyTorch engine; encode_speed.py compares engines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--sentences", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--top-k", type=int, default=100, help="neighbours kept per sentence")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--precisions", nargs="+", choices=("float32", "auto"), default=["float32", "auto"])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    sentences = distinct_snli_sentences(args.sentences, args.data_dir)
    models = {precision: load_model(precision) for precision in args.precisions}
    tokens = models[args.precisions[0]].token_ids(sentences).lengths
    stsb = SimilarityEvaluator(read_stsb("test", args.data_dir), name="stsb-test")
    quality = {precision: stsb(model)["spearman_cosine"] for precision, model in models.items()}
    for model in models.values():  # warm-up
        model.encode(sentences[:500], batch_size=args.batch_size)

    runs: dict[str, list[dict[str, float]]] = {precision: [] for precision in models}
    for repeat in range(args.repeats):
        order = alternating_order(list(models), repeat)
        for precision in order:
            start = time.perf_counter()
            vectors = models[precision].encode(sentences, batch_size=args.batch_size, show_progress_bar=False)
            encoded = time.perf_counter()
            pairs = paraphrase_mining(vectors, top_k=args.top_k)
            mined = time.perf_counter()
            runs[precision].append(
                {"encode": encoded - start, "mine": mined - encoded, "total": mined - start}
            )
    print(
        f"{len(sentences)} distinct SNLI sentences (mean {statistics.mean(tokens):.1f} tokens), "
        f"batch {args.batch_size}, {args.threads} threads, top_k {args.top_k}, {len(pairs)} pairs"
    )
    median = {}
    for precision, precision_runs in runs.items():
        median[precision] = {
            key: statistics.median(run[key] for run in precision_runs) for key in precision_runs[0]
        }
        m = median[precision]
        print(
            f"  {precision:<7} encode {m['encode']:.2f} s + mine {m['mine']:.2f} s = {m['total']:.2f} s "
            f"(median of {args.repeats}; totals "
            + ", ".join(f"{run['total']:.2f}" for run in precision_runs)
            + f"); STSb test Spearman x 100: {quality[precision]:.2f}"
        )
    best = pairs[0]
    print(f"  best pair {best.score:.3f}: {sentences[best.i]!r} <-> {sentences[best.j]!r}")
    if args.output:
        result = {
            "date": date.today().isoformat(),
            "cpu": platform.processor() or platform.machine(),
            "threads": args.threads,
            "sentences": len(sentences),
            "mean_tokens": statistics.mean(tokens),
            "batch_size": args.batch_size,
            "top_k": args.top_k,
            "median_seconds": median,
            "stsb_test_spearman": quality,
            "runs": runs,
        }
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
