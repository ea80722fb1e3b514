"""Retrieval fine-tuning on local data, measured on sets the model did not train on.

Training data: SNLI *dev* premises with their entailed hypotheses (the only NLI text here besides the
test split, which the snli-proxy set is made of). Each arm trains the starting model (``--base``: the
bundled all-MiniLM-L6-v2, or any model directory, e.g. a static model from ``sbert distill static``)
with MultipleNegativesRankingLoss on the same pairs, epochs, batch size and learning rate; only the
negatives or the loss differ:

- ``in-batch``: (anchor, positive) pairs: the other rows' positives are the only negatives;
- ``mined``: (anchor, positive, negative_1..k) with ``--num-negatives`` hard negatives per pair mined
  by ``sbert.applications.hard_negatives`` from every SNLI dev hypothesis (the best of the miner's
  top 50 after skipping ``--range-min``, at least 0.05 below the positive's score; the miner is the
  bundled model unless ``--miner`` names another); pairs short of k negatives are left out;
- ``matryoshka``: the in-batch arm under MatryoshkaLoss at 384/256/128/64 dimensions (those the
  model has).

Every model is scored on the retrieval proxies (NDCG@10, exact search) and STSb test (Spearman x 100)
at 384, 256, 128 and 64 dimensions (prefixes, renormalised; those the model has). Seeds change the
order of the batches and the dropout. Results go to ``benchmarks/results/retrieval_finetune.json``.

    flock /tmp/sbert-heavy.lock python benchmarks/retrieval_finetune.py --seeds 0 1 2
    sbert distill static --output static-256
    flock /tmp/sbert-heavy.lock python benchmarks/retrieval_finetune.py --base static-256 \
        --arms in-batch mined --num-negatives 5 --epochs 3 --batch-size 64 --learning-rate 0.01 \
        --output benchmarks/results/retrieval_finetune_static.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from encode_speed import cpu_name
from sbert import SentenceEncoder
from sbert.data.beir import proxy_set
from sbert.data.readers import read_snli_senteval, read_stsb
from sbert.data.training_files import write_training_file
from sbert.evaluation.retrieval import embed_set, search_and_score
from sbert.training.recipes import RecipeConfig, train_recipe

DIMENSIONS = (384, 256, 128, 64)
PROXIES = ("stsb-proxy", "snli-proxy")
ARMS = ("in-batch", "mined", "matryoshka")
RESULTS = Path(__file__).parent / "results" / "retrieval_finetune.json"
RANGE_MAX = 50
MARGIN = 0.05


def training_pairs() -> tuple[list[tuple[str, str]], list[str]]:
    """(premise, entailed hypothesis) pairs of SNLI dev, and every SNLI dev hypothesis (the mining pool)."""
    rows = read_snli_senteval("dev")
    pairs = sorted({(r.sentence1.strip(), r.sentence2.strip()) for r in rows if r.label == "entailment"})
    return pairs, sorted({r.sentence2.strip() for r in rows})


def mine(pairs: list[tuple[str, str]], pool: list[str], path: Path, args: argparse.Namespace) -> int:
    """Write ``--num-negatives`` hard negatives per pair, mined by ``--miner``, to ``path``; rows written."""
    from sbert.applications.hard_negatives import MiningOptions, mine_hard_negatives, write_mined

    options = MiningOptions(
        range_min=args.range_min, range_max=RANGE_MAX, absolute_margin=MARGIN,
        num_negatives=args.num_negatives, sampling_strategy="top", batch_size=64,
    )  # fmt: skip
    mined = mine_hard_negatives(pairs, SentenceEncoder.from_pretrained(args.miner), options, corpus=pool)
    write_mined(mined, path)
    return len(mined.rows)


def dimensions_of(model: SentenceEncoder) -> tuple[int, ...]:
    """The DIMENSIONS this model has (a 256-d static model has no 384-d prefix)."""
    return tuple(d for d in DIMENSIONS if d <= model.dim)


def score(model: SentenceEncoder) -> dict[str, dict[int, float]]:
    """NDCG@10 on each proxy and STSb test Spearman x 100, at each of the model's DIMENSIONS."""
    scores: dict[str, dict[int, float]] = {}
    for name in PROXIES:
        embedded = embed_set(model, proxy_set(name), batch_size=64)
        scores[name] = {
            d: search_and_score(embedded, dimensions=d).metrics["ndcg@10"] for d in dimensions_of(model)
        }
    test = read_stsb("test")
    first = model.encode([p.sentence1 for p in test], batch_size=64)
    second = model.encode([p.sentence2 for p in test], batch_size=64)
    gold = [p.score for p in test]
    scores["stsb"] = {}
    for d in dimensions_of(model):
        a, b = first[:, :d], second[:, :d]
        cosines = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        scores["stsb"][d] = 100 * float(spearmanr(cosines, gold).statistic)
    return scores


def train(
    arm: str, train_file: Path, output: Path, seed: int, dims: tuple[int, ...], args: argparse.Namespace
) -> SentenceEncoder:
    config = RecipeConfig(
        "file",
        output,
        base=args.base,
        seed=seed,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        train_file=str(train_file),
        loss="mnrl",
        eval_steps=0,
        checkpoint_steps=10**9,
        show_progress_bar=False,
        matryoshka_dimensions=dims if arm == "matryoshka" else (),
    )
    train_recipe(config)
    return SentenceEncoder.from_pretrained(output)


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sample standard deviation of each figure over the seeds."""
    out: dict[str, Any] = {}
    for metric in runs[0]:
        out[metric] = {}
        for d in runs[0][metric]:
            values = [run[metric][d] for run in runs]
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            out[metric][d] = {"mean": statistics.fmean(values), "sd": sd, "values": values}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="model to fine-tune (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--miner", help="model that mines the negatives (default: the bundled one)")
    parser.add_argument("--num-negatives", type=int, default=1, help="mined: negatives per pair")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--range-min", type=int, default=0, help="mined: skip this many best candidates")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    started = time.time()
    start = SentenceEncoder.from_pretrained(args.base)
    results: dict[str, Any] = {"start": score(start)}
    pairs, pool = training_pairs()
    with tempfile.TemporaryDirectory() as scratch:
        files = {"in-batch": Path(scratch) / "pairs.jsonl", "mined": Path(scratch) / "mined.jsonl"}
        write_training_file(files["in-batch"], ("sentence1", "sentence2"), pairs)
        if "mined" in args.arms:
            results["mined_rows"] = mine(pairs, pool, files["mined"], args)
        for arm in args.arms:
            runs = []
            for seed in args.seeds:
                model = train(
                    arm,
                    files.get(arm, files["in-batch"]),
                    Path(scratch) / f"{arm}-{seed}",
                    seed,
                    dimensions_of(start),
                    args,
                )
                runs.append(score(model))
                print(arm, seed, json.dumps(runs[-1]), flush=True)
            results[arm] = summary(runs)
    results["settings"] = {
        "pairs": len(pairs), "pool": len(pool), "range_min": args.range_min, "range_max": RANGE_MAX,
        "absolute_margin": MARGIN, "num_negatives": args.num_negatives, "seeds": args.seeds,
        "batch_size": args.batch_size, "epochs": args.epochs, "learning_rate": args.learning_rate,
        "loss": "mnrl", "base": args.base or "all-MiniLM-L6-v2 (bundled)",
        "miner": args.miner or "all-MiniLM-L6-v2 (bundled)",
    }  # fmt: skip
    results["machine"] = f"{cpu_name()}, {os.cpu_count()} cores"
    results["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results["seconds"] = round(time.time() - started)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1))
    print(json.dumps({k: v for k, v in results.items() if k in ("start", "settings")}, indent=1))


if __name__ == "__main__":
    main()
