"""The trainer's host overhead per step, on a CPU: a GPU-bound figure measured where no GPU is.

On an H200 the bundled MiniLM-L6's forward and backward over 512 short sentences take ~2-3 ms of
compute, yet a training step took ~30 ms at batch 64 and ~67 ms at batch 256 (benchmarks/gpu_train.py,
2026-11-27): the step is the host's work (Python, collation, kernel launches). This proxy makes the
model's compute negligible on a CPU too, so what is left is that host work: a random BERT of 2 layers
× 32 hidden with the bundled model's tokenizer and vocabulary (30,522 tokens), trained by sbert's
``Trainer`` on the CUDA plan (unpadded forward, padded attention blocks, bf16 autocast where the CPU
has it) with MultipleNegativesRankingLoss on SNLI entailment pairs, as gpu_train.py's speed section
runs it. Steps/s over steps 2 to the last (set-up and the final save left out), median of
``--repeats``; ``--profile`` writes a cProfile of one run at the largest batch.

    flock /tmp/sbert-heavy.lock python benchmarks/train_host_proxy.py --repeats 5
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from sbert import SentenceEncoder
from sbert.data import ScoredPair, read_snli_senteval
from sbert.losses import MultipleNegativesRankingLoss
from sbert.model.hub import bundled_model_path
from sbert.training import Trainer, TrainingConfig
from sbert.training.autocast import training_precision
from sbert.training.embedder import embedder_plan


def proxy_model(work: Path) -> Path:
    """The bundled model's tokenizer and sbert configs over a random 2-layer, 32-wide BERT."""
    from transformers import BertConfig, BertModel

    model = work / "proxy-model"
    shutil.copytree(bundled_model_path(), model, dirs_exist_ok=True)
    config = BertConfig.from_pretrained(model)
    # Dropout off: on a CPU its random draws and attention's math path with dropout cost far more
    # than on a GPU (one kernel each), and would hide the host's work this proxy is for.
    shape = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    config.update(shape | {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0})
    torch.manual_seed(0)
    BertModel(config).save_pretrained(model)
    pooling = model / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    pooling.write_text(json.dumps(settings | {"word_embedding_dimension": 32}))
    return model


def snli_pairs(data: Path | None) -> list[ScoredPair]:
    pairs = [
        p for split in ("dev", "test") for p in read_snli_senteval(split, data) if p.label == "entailment"
    ]
    return [ScoredPair(p.sentence1, p.sentence2, 1.0) for p in pairs]


def run(model_path: Path, pairs: list[ScoredPair], batch: int, bf16: bool) -> float:
    """One training run of ``len(pairs) // batch`` steps; its steps/s over steps 2 to the last."""
    model = SentenceEncoder.from_pretrained(model_path, device="cpu", precision="float32")
    objective = MultipleNegativesRankingLoss(model)
    steps = len(pairs) // batch
    times: dict[int, float] = {}

    def clock(state: Any) -> None:
        if state.global_step in (1, steps):
            times[state.global_step] = time.perf_counter()

    config = TrainingConfig(
        batch_size=batch,
        bf16=bf16,
        eval_steps=None,
        checkpoint_steps=None,
        log_steps=10**6,
        show_progress_bar=False,
    )
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(objective, pairs[: steps * batch], Path(out) / "run", config, callbacks=[clock])
        # The CUDA plan on the CPU: the unpadded forward with padded attention blocks, no pinning.
        trainer.precision = training_precision(torch.device("cpu"), bf16)
        trainer.embedder_plan = embedder_plan(model, trainer.precision.dtype is not None, unpadded=True)
        trainer.train()
    return (steps - 1) / (times[steps] - times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="the data folder (default: SBERT_DATA)")
    parser.add_argument("--batch", type=int, action="append", help="batch sizes (default 64 and 256)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-bf16", action="store_true")
    parser.add_argument("--profile", type=Path, help="write a cProfile of one run at the largest batch here")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the host's own work, not the CPU's matrix products in parallel
    pairs = snli_pairs(args.data)
    batches = args.batch or [64, 256]
    with tempfile.TemporaryDirectory() as work:
        model = proxy_model(Path(work))
        result: dict[str, Any] = {}
        for batch in batches:
            chunk = pairs[: batch * args.steps]
            run(model, chunk, batch, not args.no_bf16)  # warm-up
            rates = [run(model, chunk, batch, not args.no_bf16) for _ in range(args.repeats)]
            median = statistics.median(rates)
            result[str(batch)] = {
                "steps_per_s": median,
                "ms_per_step": 1000 / median,
                "pairs_per_s": median * batch,
                "repeats": rates,
            }
            print(f"batch {batch}: {1000 / median:.1f} ms a step ({median * batch:.0f} pairs/s)", flush=True)
        if len(batches) > 1:
            low, high = min(batches), max(batches)
            slope = (result[str(high)]["ms_per_step"] - result[str(low)]["ms_per_step"]) / (high - low)
            fixed = result[str(low)]["ms_per_step"] - slope * low
            result["per_pair_ms"], result["fixed_ms"] = slope, fixed
            print(f"host cost a step ≈ {fixed:.2f} ms + {slope * 1000:.1f} µs a pair")
        if args.profile:
            high = max(batches)
            profiler = cProfile.Profile()
            profiler.enable()
            run(model, pairs[: high * args.steps], high, not args.no_bf16)
            profiler.disable()
            profiler.dump_stats(args.profile)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
