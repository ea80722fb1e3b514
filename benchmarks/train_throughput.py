"""Training speed: sbert's Trainer against sentence-transformers' SentenceTransformerTrainer.

Same model (the bundled all-MiniLM-L6-v2), same STSb train pairs, batch size, learning-rate schedule
and loss (cosine similarity regressed onto the gold score scaled to 0-1: sbert's CosineMSELoss,
sentence-transformers' CosineSimilarityLoss). sbert runs twice: exact fp32 and bf16 autocast, both
with length grouping; sentence-transformers runs with its defaults (fp32). All sides run in one
process, alternating, after a warm-up; each figure is the median of the repeats in training pairs
per second, and the ratios are taken per repeat.

    pip install datasets accelerate     # sentence-transformers' trainer needs them
    flock /tmp/sbert-heavy.lock python benchmarks/train_throughput.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import statistics
import tempfile
from collections.abc import Callable
from datetime import date

import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.losses import CosineSimilarityLoss
from sentence_transformers.training_args import SentenceTransformerTrainingArguments

from alternating import alternating_rates
from sbert import SentenceEncoder
from sbert.data import ScoredPair, read_stsb
from sbert.losses import CosineMSELoss
from sbert.model.hub import bundled_model_path
from sbert.training import Trainer, TrainingConfig


def sbert_runner(pairs: list[ScoredPair], batch_size: int, bf16: bool) -> Callable[[], None]:
    model = SentenceEncoder.from_pretrained(device="cpu")
    objective = CosineMSELoss(model, score_range=(0.0, 5.0))

    def run() -> None:
        config = TrainingConfig(
            epochs=1,
            batch_size=batch_size,
            bf16=bf16,
            eval_steps=None,
            checkpoint_steps=None,
            show_progress_bar=False,
        )
        with tempfile.TemporaryDirectory() as output:
            Trainer(objective, pairs, output, config).train()

    return run


def st_runner(pairs: list[ScoredPair], batch_size: int) -> Callable[[], None]:
    model = SentenceTransformer(str(bundled_model_path()), device="cpu")
    dataset = Dataset.from_dict(
        {
            "sentence1": [p.sentence1 for p in pairs],
            "sentence2": [p.sentence2 for p in pairs],
            "score": [p.score / 5.0 for p in pairs],  # CosineSimilarityLoss wants 0-1 labels
        }
    )
    loss = CosineSimilarityLoss(model)

    def run() -> None:
        with tempfile.TemporaryDirectory() as output:
            arguments = SentenceTransformerTrainingArguments(
                output_dir=output,
                num_train_epochs=1,
                per_device_train_batch_size=batch_size,
                learning_rate=2e-5,
                warmup_ratio=0.1,
                weight_decay=0.01,
                save_strategy="no",
                report_to="none",
                disable_tqdm=True,
                logging_strategy="no",
                use_cpu=True,
                seed=42,
            )
            SentenceTransformerTrainer(model=model, args=arguments, train_dataset=dataset, loss=loss).train()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--pairs", type=int, default=512, help="STSb train pairs per run (the first N)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    logging.getLogger("sbert").setLevel(logging.WARNING)
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    logging.getLogger("transformers").setLevel(logging.ERROR)

    pairs = read_stsb("train", args.data_dir)[: args.pairs]
    runners = {
        "sbert fp32": sbert_runner(pairs, args.batch_size, bf16=False),
        "sbert bf16": sbert_runner(pairs, args.batch_size, bf16=True),
        "sentence-transformers": st_runner(pairs, args.batch_size),
    }
    warmup = read_stsb("train", args.data_dir)[: 4 * args.batch_size]
    for run in (sbert_runner(warmup, args.batch_size, False), sbert_runner(warmup, args.batch_size, True)):
        run()
    st_runner(warmup, args.batch_size)()

    rates = alternating_rates(runners, args.repeats, len(pairs))
    reference = rates["sentence-transformers"]
    ratios = {name: [a / b for a, b in zip(rates[name], reference)] for name in ("sbert fp32", "sbert bf16")}
    result = {
        "date": date.today().isoformat(),
        "cpu": platform.processor() or platform.machine(),
        "threads": args.threads,
        "pairs": len(pairs),
        "batch_size": args.batch_size,
        "pairs_per_second": {name: statistics.median(values) for name, values in rates.items()},
        "ratio_median": {name: statistics.median(values) for name, values in ratios.items()},
        "ratios": ratios,
    }
    print(f"{len(pairs)} STSb train pairs, batch {args.batch_size}, {args.threads} threads, 1 epoch")
    for name, values in rates.items():
        print(f"  {name:<22} {statistics.median(values):7.1f} pairs/s (median of {args.repeats})")
    for name, values in ratios.items():
        per_repeat = ", ".join(f"{r:.2f}" for r in values)
        print(f"  ratio {name} / sentence-transformers: {statistics.median(values):.2f} ({per_repeat})")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
