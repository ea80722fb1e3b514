"""Hard-negative mining of SNLI test's entailment pairs (premise → entailed hypothesis) with the bundled
model: how long each stage takes by exact search and through indexes, and what the negatives score.

The corpus is every distinct SNLI test hypothesis (entailed, neutral and contradicting ones), so the
negatives come from the same sentences as ``snli-proxy``'s corpus. Settings are NV-Retriever's
(``relative_margin=0.05``, top sampling; sentence-transformers' recommended defaults) with 5
negatives. One warm-up encode, then ``--repeats`` timed runs per search; medians reported. A search
named ``saved-KIND`` first builds and saves an index of that kind over the corpus (timed apart, as
``index``: a one-off), then mines through the loaded index (``index=``), which encodes only the
premises and their hypotheses. The same pairs through the command line:

    flock /tmp/sbert-heavy.lock python benchmarks/mine_negatives.py --data-dir ../shared/data
    sbert mine-negatives pairs.tsv --corpus hypotheses.txt --relative-margin 0.05 --num-negatives 5 -o mined.tsv
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from sbert import SentenceEncoder
from sbert.applications.hard_negatives import MiningOptions, mine_hard_negatives
from sbert.data import read_snli_senteval
from sbert.index import VectorIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--searches", nargs="+", default=["exact", "flat", "hnsw", "ivfpq"])
    parser.add_argument("--num-negatives", type=int, default=5)
    parser.add_argument("--relative-margin", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()

    snli = read_snli_senteval("test", args.data_dir)
    pairs = [(pair.sentence1, pair.sentence2) for pair in snli if pair.label == "entailment"]
    corpus = list(dict.fromkeys(pair.sentence2 for pair in snli))
    model = SentenceEncoder.from_pretrained(device="cpu", precision="float32")
    model.encode(corpus[:500], batch_size=args.batch_size)  # warm-up
    print(
        f"{len(pairs)} SNLI test entailment pairs ({len(dict.fromkeys(a for a, _ in pairs))} premises), "
        f"corpus {len(corpus)} hypotheses, {args.num_negatives} negatives, relative margin "
        f"{args.relative_margin}, {torch.get_num_threads()} threads, model {model.name} ({model.precision})"
    )
    figures = {}
    folder = Path(tempfile.mkdtemp(prefix="mine-negatives-"))
    for search in args.searches:
        where: dict[str, Any] = {"corpus": corpus}
        options = MiningOptions(
            relative_margin=args.relative_margin,
            num_negatives=args.num_negatives,
            batch_size=args.batch_size,
            index_kind=None if search == "exact" or search.startswith("saved-") else search,
            show_progress_bar=False,
        )
        built = 0.0
        if search.startswith("saved-"):
            start = time.perf_counter()
            vectors = model.encode_document(corpus, batch_size=args.batch_size, normalize=True)
            VectorIndex.build(vectors, texts=corpus, kind=search.removeprefix("saved-")).save(folder / search)
            built = time.perf_counter() - start
            where = {"index": VectorIndex.load(folder / search, model=model)}
        runs = [mine_hard_negatives(pairs, model, options, **where) for _ in range(args.repeats)]
        result = runs[-1]
        seconds = {key: statistics.median(run.seconds[key] for run in runs) for key in result.seconds}
        if built:
            seconds = {"index": built, **seconds}
        positives = statistics.mean(row.positive_score for row in result.rows)
        negatives = statistics.mean(s for row in result.rows for s in row.negative_scores)
        figures[search] = {
            "seconds": seconds,
            "rows": len(result.rows),
            "missing": result.missing,
            "skipped": result.skipped,
            "mean_positive": positives,
            "mean_negative": negatives,
        }
        print(
            f"  {search:<6} "
            + " + ".join(f"{key} {value:.2f} s" for key, value in seconds.items())
            + f" = {sum(seconds.values()):.2f} s; {len(result.rows)} rows, {result.missing} short; "
            f"mean cosine positive {positives:.4f}, negative {negatives:.4f} "
            f"(skipped by the margin: {result.skipped.get('relative_margin', 0)})"
        )
    if args.output:
        report = {
            "date": datetime.now(timezone.utc).isoformat(timespec="minutes"),
            "cpu": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(),
            "pairs": len(pairs),
            "corpus": len(corpus),
            "figures": figures,
        }
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
