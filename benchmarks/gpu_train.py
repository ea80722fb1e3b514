"""sbert's trainer against sentence-transformers' on one GPU: issue 47's training figures (≤ 4 minutes).

Sections, each isolated (one that fails prints its traceback; the others still run) and written to
``--output`` as it ends:

- **speed**: training pairs/s (over steps 2 to the last, the device's queue drained at both ends: each
  trainer's set-up and sbert's final save left out) of sbert's ``Trainer`` and sentence-transformers'
  ``SentenceTransformerTrainer`` on the same model (the bundled all-MiniLM-L6-v2), the same SNLI
  entailment pairs (premise, hypothesis; sbert with its default length grouping), loss MultipleNegativesRankingLoss (scale 20, cosine), bf16,
  at batch 64 and 256; the two sides alternate, median of ``--repeats`` after a warm-up; the ratio
  is taken per repeat. Each run is ``--steps`` optimiser steps from the same pairs.
- **curves**: the first 50 steps' losses of both trainers side by side, batch 64, the same seed,
  weights and data order (sbert's shuffled order, given to sentence-transformers in sequence);
  dropout draws differ, so the curves agree within noise: the means of steps 26-50 within two
  standard errors of the step-to-step noise. The first step is compared with dropout off
  (``first_step``: both trainers, one step on the same batch of a copy of the model whose dropout
  is 0), where it is deterministic: within 1e-3 in fp32, 1e-2 in bf16 (bf16's rounding in two
  different kernels). With dropout on, a first step is a single draw: on the CPU, ten draws of
  sentence-transformers' first batch gave losses 0.307-0.425 (mean 0.368, s.d. 10.5%; 0.319 with
  dropout off), so two trainers' first steps differ by ~15% at one s.d. by chance alone (the
  H200's 8.4% on 2026-11-27 was such a draw). With dropout off the CPU's trainers are 1e-7 apart
  in fp32 and 3e-5 in bf16 (sbert's padded CPU plan); sbert's unpadded forward (the GPU's) against
  sentence-transformers' loss in bf16 on the CPU: 0.3%.
- **stsb**: a fixed fine-tuning recipe (CosineMSELoss on the first 1,024 STSb train pairs, batch 16,
  1 epoch, lr 2e-5, seed 42; bf16 on the GPU) then STSb test Spearman ×100, against the CPU's result
  of the same recipe in fp32 (``CPU_STSB``, measured with ``--device cpu --section stsb``).
- issue 47's done-means for training, each printed met / NOT met: sbert ≥ 2× sentence-transformers
  at batch 256; the curves equal within noise; STSb within 0.3 of the CPU's.

The model and data travel in ``.gpu-carry`` (``benchmarks/gpu.py --prepare``, then this script's
``--prepare`` adds the training pairs). sentence-transformers' trainer needs ``accelerate`` and
``datasets``; the GPU image has ``accelerate`` (and ``datasets``' ``pyarrow``, ``pandas``, ``xxhash``)
but not ``datasets``, ``dill`` or ``multiprocess``, and cannot download them: ``--wheels .whl``
downloads those (1 MiB) here for its Python 3.12 into the ignored ``.whl/``, and the device call
installs them first (docs/benchmarks.md#gpu has the command). Without them the sentence-transformers
side reports why and sbert's side still runs.

``--device cpu --pairs 600 --steps 2 --repeats 1 --curve-steps 5 --stsb-pairs 64`` runs the same code on
a CPU (a smoke test of this script, not a figure).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import torch

from alternating import alternating_order
from curve_checks import dropout_off, first_step_row, within_noise
from gpu import model_dir, run_sections  # model_dir: the fp16-stored bundled weights, read back as float32

BATCH_SIZES = (64, 256)
CURVE_BATCH = 64
# The stsb section's recipe on the CPU in fp32 (the model of .gpu-carry: the bundled weights stored in
# fp16, read back as float32; untrained 82.03): `python benchmarks/gpu_train.py --device cpu --section
# stsb`, AMD EPYC, 2 cores, torch 2.13, 2026-11-27 14:38 UTC (145 s of training).
CPU_STSB: float | None = 82.20
# What sentence-transformers' trainer needs and the GPU image lacks (its package list,
# /work/.library/device/KINDS.md, 2026-11: accelerate, pandas, pyarrow, xxhash, psutil are there;
# datasets, dill, multiprocess are not). About 1 MiB: they travel beside .gpu-carry in one call.
WHEELS = ("datasets", "dill", "multiprocess")


def prepare(carry: Path) -> None:
    """Add the training pairs to ``carry`` (benchmarks/gpu.py --prepare wrote the model and STSb test)."""
    from sbert.data.readers import dataset_file

    for split in ("train", "test"):
        target = carry / "stsb" / "original" / f"sts-{split}.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(dataset_file(None, f"stsb/original/sts-{split}.csv", "STSb").read_bytes())
    for split in ("dev", "test"):
        for name in ("s1", "s2", "labels"):
            target = carry / "snli_senteval" / f"{name}.{split}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(dataset_file(None, f"snli_senteval/{name}.{split}", "SNLI").read_bytes())
    size = sum(path.stat().st_size for path in carry.rglob("*") if path.is_file())
    print(f"{carry}: {size / 2**20:.1f} MiB (the device tool carries at most 64 MiB)")


def download_wheels(folder: Path, python: str) -> None:
    """The wheels sentence-transformers' trainer needs, for a Linux x86-64 machine with ``python``."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(folder)]
    command += [
        "--python-version",
        python,
        "--platform",
        "manylinux_2_28_x86_64",
        "--platform",
        "manylinux2014_x86_64",
    ]
    subprocess.run(command + list(WHEELS), check=True)
    size = sum(path.stat().st_size for path in folder.glob("*.whl"))
    print(f"{folder}: {size / 2**20:.1f} MiB of wheels for Python {python}")


def training_pairs(carry: Path) -> list[Any]:
    """SNLI's entailment pairs (premise, hypothesis) of SentEval's dev and test files."""
    from sbert.data import read_snli_senteval
    from sbert.data.records import ScoredPair

    pairs = [
        p for split in ("dev", "test") for p in read_snli_senteval(split, carry) if p.label == "entailment"
    ]
    return [ScoredPair(p.sentence1, p.sentence2, 1.0) for p in pairs]


def sbert_order(count: int, batch_size: int, seed: int) -> np.ndarray:
    """sbert's shuffled order of ``count`` examples (no length grouping): the curves' shared order."""
    from sbert.training.batches import epoch_batches

    return np.concatenate(epoch_batches(None, count, batch_size, seed, 0))


class Clock:
    """The time at the end of the first and of the last step, the device's work included: the rate
    over the steps between leaves out each trainer's set-up and sbert's final save of the model."""

    def __init__(self, device: str, last: int) -> None:
        self.device, self.last, self.times = device, last, {}

    def __call__(self, step: int) -> None:
        if step in (1, self.last):
            if self.device == "cuda":
                torch.cuda.synchronize()  # at 2 steps of the run only: the device's queue drained
            self.times[step] = time.perf_counter()

    def rate(self, pairs_a_step: int) -> float:
        return pairs_a_step * (self.last - 1) / (self.times[self.last] - self.times[1])


def sbert_trainer(
    path: Path,
    pairs: list[Any],
    batch: int,
    device: str,
    log_steps: int,
    grouped: bool = True,
    bf16: bool = True,
) -> Callable[[], Any]:
    from sbert import SentenceEncoder
    from sbert.losses import MultipleNegativesRankingLoss
    from sbert.training import Trainer, TrainingConfig

    model = SentenceEncoder.from_pretrained(path, device=device, precision="float32")
    objective = MultipleNegativesRankingLoss(model)

    def run() -> Any:
        out = Path(tempfile.mkdtemp(prefix="sbert-train-"))
        clock = Clock(device, len(pairs) // batch)
        config = TrainingConfig(
            batch_size=batch,
            bf16=bf16,
            group_by_length=grouped,  # its default; off for the curves: sentence-transformers' batches
            eval_steps=None,
            checkpoint_steps=None,
            log_steps=log_steps,
            show_progress_bar=False,
        )
        Trainer(objective, pairs, out / "run", config, callbacks=[lambda s: clock(s.global_step)]).train()
        return clock.rate(batch) if log_steps > 1 else out / "run"

    return run


def st_trainer(
    path: Path, pairs: list[Any], batch: int, device: str, curve: bool = False, bf16: bool = True
) -> Callable[[], Any]:
    """sentence-transformers' trainer over ``pairs`` in their order; returns its pairs/s (``curve``:
    its per-step losses)."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import SentenceTransformerTrainingArguments
    from torch.utils.data import BatchSampler, SequentialSampler
    from transformers import TrainerCallback

    class Stamp(TrainerCallback):  # type: ignore[misc]
        def __init__(self, clock: Clock) -> None:
            self.clock = clock

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.clock(state.global_step)

    class InOrder(SentenceTransformerTrainer):  # type: ignore[misc]
        def get_batch_sampler(
            self, dataset: Any, batch_size: int, drop_last: bool, *args: Any, **kwargs: Any
        ) -> Any:
            return BatchSampler(SequentialSampler(range(len(dataset))), batch_size, drop_last)

    model = SentenceTransformer(str(path), device=device)
    data = Dataset.from_dict(
        {"anchor": [p.sentence1 for p in pairs], "positive": [p.sentence2 for p in pairs]}
    )
    loss = MultipleNegativesRankingLoss(model)

    def run() -> Any:
        clock = Clock(device, len(pairs) // batch)
        with tempfile.TemporaryDirectory() as output:
            arguments = SentenceTransformerTrainingArguments(
                output_dir=output,
                num_train_epochs=1,
                per_device_train_batch_size=batch,
                learning_rate=2e-5,
                warmup_ratio=0.1,
                weight_decay=0.01,
                max_grad_norm=1.0,
                bf16=bf16,
                save_strategy="no",
                report_to="none",
                disable_tqdm=True,
                logging_steps=1 if curve else 10**6,
                use_cpu=device == "cpu",
                seed=42,
            )
            trainer = InOrder(
                model=model, args=arguments, train_dataset=data, loss=loss, callbacks=[Stamp(clock)]
            )
            trainer.train()
        if curve:
            return [float(r["loss"]) for r in trainer.state.log_history if "loss" in r]
        return clock.rate(batch)

    return run


def speed(
    path: Path, pairs: list[Any], steps: int, repeats: int, device: str, sizes: tuple[int, ...] = BATCH_SIZES
) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for batch in sizes:
        chunk = pairs[: batch * steps]
        runners: dict[str, Callable[[], object]] = {"sbert": sbert_trainer(path, chunk, batch, device, 10**6)}
        try:
            runners["sentence-transformers"] = st_trainer(path, chunk, batch, device)
        except ImportError as error:
            table[f"sentence-transformers_{batch}"] = f"not run: {error} (see --wheels)"
        for run in runners.values():
            run()  # warm-up: kernels, allocator, autotuning
        rates: dict[str, list[float]] = {name: [] for name in runners}
        for repeat in range(repeats):
            for name in alternating_order(list(runners), repeat):
                rates[name].append(runners[name]())
        row = {name: statistics.median(values) for name, values in rates.items()}
        if "sentence-transformers" in rates:
            ratios = [a / b for a, b in zip(rates["sbert"], rates["sentence-transformers"])]
            row["ratio"] = statistics.median(ratios)
        table[str(batch)] = row | {"pairs": len(chunk), "repeats": rates}
        print(f"batch {batch}: {json.dumps(row)}", flush=True)
    return table


def curves(path: Path, pairs: list[Any], steps: int, device: str) -> dict[str, Any]:
    count = CURVE_BATCH * steps
    ordered = [pairs[i] for i in sbert_order(count, CURVE_BATCH, 42)]  # sbert shuffles; ST runs in order
    run = sbert_trainer(path, pairs[:count], CURVE_BATCH, device, log_steps=1, grouped=False)()
    records = [json.loads(line) for line in (run / "training_log.jsonl").read_text().splitlines()]
    result: dict[str, Any] = {"sbert": [r["loss"] for r in records if "loss" in r]}
    plan = next((r for r in records if r.get("event") == "plan"), {})
    result["sbert_plan"] = {k: plan.get(k) for k in ("precision", "forward")}
    result["sentence-transformers"] = st_trainer(path, ordered, CURVE_BATCH, device, curve=True)()
    noise_met, why = within_noise(result["sbert"], result["sentence-transformers"])
    result["first_step"] = first_step(path, pairs, device)
    first_met = all(row["met"] for row in result["first_step"].values())
    result["equal_within_noise"] = noise_met and first_met
    firsts = "; ".join(f"{name} {row['relative']:.1e} apart" for name, row in result["first_step"].items())
    result["why"] = f"{why}; first step with dropout off: {firsts}"
    return result


def first_step(path: Path, pairs: list[Any], device: str) -> dict[str, Any]:
    """Both trainers' first loss on the same batch from the same weights with dropout off."""
    quiet = dropout_off(path)
    batch = pairs[:CURVE_BATCH]
    ordered = [batch[i] for i in sbert_order(CURVE_BATCH, CURVE_BATCH, 42)]  # sbert's shuffle of one batch
    rows: dict[str, Any] = {}
    for name, bf16 in (("fp32", False), ("bf16", True)):
        run = sbert_trainer(quiet, batch, CURVE_BATCH, device, log_steps=1, grouped=False, bf16=bf16)()
        records = [json.loads(line) for line in (run / "training_log.jsonl").read_text().splitlines()]
        ours = next(r["loss"] for r in records if "loss" in r)
        theirs = st_trainer(quiet, ordered, CURVE_BATCH, device, curve=True, bf16=bf16)()[0]
        rows[name] = first_step_row(name, ours, theirs)
        print(f"first step, dropout off, {name}: {json.dumps(rows[name])}", flush=True)
    return rows


def stsb(path: Path, carry: Path, pairs: int, device: str) -> dict[str, Any]:
    from sbert import SentenceEncoder
    from sbert.data import read_stsb
    from sbert.evaluation import SimilarityEvaluator
    from sbert.losses import CosineMSELoss
    from sbert.training import Trainer, TrainingConfig

    torch.manual_seed(42)
    model = SentenceEncoder.from_pretrained(path, device=device, precision="float32")
    config = TrainingConfig(batch_size=16, bf16=device == "cuda", eval_steps=None, checkpoint_steps=None)
    config.show_progress_bar = False
    with tempfile.TemporaryDirectory() as output:
        started = time.perf_counter()
        Trainer(CosineMSELoss(model), read_stsb("train", carry)[:pairs], output, config).train()
        seconds = time.perf_counter() - started
    score = SimilarityEvaluator(read_stsb("test", carry))(model)["spearman_cosine"]
    return {"spearman": score, "pairs": pairs, "train_seconds": seconds, "cpu_fp32": CPU_STSB}


def done_means(result: dict[str, Any]) -> list[str]:
    lines = []
    row = result.get("speed", {}).get("256", {})
    ratio = row.get("ratio")
    lines.append(
        _verdict(ratio is not None and ratio >= 2, f"sbert ≥ 2× sentence-transformers at batch 256: {ratio}")
    )
    curve = result.get("curves", {})
    lines.append(
        _verdict(bool(curve.get("equal_within_noise")), f"loss curves equal within noise: {curve.get('why')}")
    )
    score = result.get("stsb", {}).get("spearman")
    met = score is not None and CPU_STSB is not None and abs(score - CPU_STSB) <= 0.3
    lines.append(_verdict(met, f"STSb {score} within 0.3 of the CPU's {CPU_STSB}"))
    return lines


def _verdict(met: bool, what: str) -> str:
    return f"{'met' if met else 'NOT met'}: {what}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", type=Path, help="add the training pairs to this carry folder, then stop")
    parser.add_argument(
        "--wheels", type=Path, help="download sentence-transformers' trainer's wheels here, then stop"
    )
    parser.add_argument("--python", default="3.12", help="with --wheels: the GPU machine's Python (3.12.3)")
    parser.add_argument(
        "--install-wheels", type=Path, help="on the GPU: install these wheels into --site, then stop"
    )
    parser.add_argument("--site", type=Path, default=Path(".gpu-site"))
    parser.add_argument("--carry", type=Path, default=Path(".gpu-carry"))
    parser.add_argument("--output", type=Path)
    parser.add_argument("--device", default="cuda", help="cpu: a smoke test of this script")
    parser.add_argument("--section", action="append", help="run only these sections (speed, curves, stsb)")
    parser.add_argument("--pairs", type=int, default=None, help="only the first N training pairs")
    parser.add_argument("--steps", type=int, default=20, help="optimiser steps a timed run")
    parser.add_argument("--batch", type=int, action="append", help="speed: only these batch sizes (64, 256)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--curve-steps", type=int, default=50)
    parser.add_argument("--stsb-pairs", type=int, default=1024)
    parser.add_argument("--budget-s", type=float, default=200, help="skip sections that would start later")
    args = parser.parse_args()
    if args.prepare or args.wheels:
        if args.prepare:
            prepare(args.prepare)
        if args.wheels:
            download_wheels(args.wheels, args.python)
        return
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("benchmarks/gpu_train.py needs a CUDA GPU (or --device cpu for a smoke test)")
    started = time.perf_counter()
    pairs = training_pairs(args.carry)[: args.pairs]
    path, weights = model_dir(args.carry, Path(os.environ.get("TMPDIR", "/tmp")) / "sbert-gpu-train")
    result: dict[str, Any] = {
        "date": date.today().isoformat(),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu",
        "versions": _versions(),
        "weights": weights,
        "training_pairs": len(pairs),
    }
    sections: dict[str, Callable[[], Any]] = {
        "speed": lambda: speed(
            path, pairs, args.steps, args.repeats, args.device, tuple(args.batch or BATCH_SIZES)
        ),
        "curves": lambda: curves(path, pairs, args.curve_steps, args.device),
        "stsb": lambda: stsb(path, args.carry, args.stsb_pairs, args.device),
    }
    chosen = {name: run for name, run in sections.items() if not args.section or name in args.section}
    run_sections(chosen, result, started, args.budget_s, args.output)
    result["done_means"] = done_means(result)
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("\n".join(result["done_means"]))


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("torch", "transformers", "sentence-transformers", "accelerate", "datasets", "pyarrow"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


if __name__ == "__main__":
    main()
