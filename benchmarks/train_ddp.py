"""Training throughput under torchrun: 1 process against 2 processes (DDP, gloo on CPU, NCCL on GPU).

The bundled all-MiniLM-L6-v2 trains on STSb train pairs (CosineMSELoss, fp32, the same global batch
for every side) in processes started by ``torchrun``; each launch trains once to warm up, then once
timed, and reports training pairs per second (rank 0's wall time from a barrier to the end of
``Trainer.train``, start-up and model loading excluded). The sides alternate their order over the
repeats; the figure is the median.

On a 2-core CPU, two processes share the same two cores, so the figure measures DDP's overhead
(all-reduce of the gradients, the data split), not a speed-up: compare "2 processes x 1 thread" with
"1 process x 1 thread" per core, and with "1 process x 2 threads" for the whole machine. On a machine
with GPUs, ``--gpus`` compares 1 process on 1 GPU with one process per GPU.

    flock /tmp/sbert-heavy.lock python benchmarks/train_ddp.py --data-dir ../shared/data
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
from datetime import date
from pathlib import Path

from alternating import alternating_order

SIDES = {  # name: (processes, threads per process)
    "1 process x 2 threads": (1, 2),
    "1 process x 1 thread": (1, 1),
    "2 processes x 1 thread": (2, 1),
}


def worker(args: argparse.Namespace) -> None:
    """One process of a launch: train twice (warm-up, timed); rank 0 writes pairs/s to ``args.result``."""
    import torch
    import torch.distributed as dist

    from sbert import SentenceEncoder
    from sbert.base.distributed import distributed_device, join_process_group, leave_process_group
    from sbert.data import read_stsb
    from sbert.losses import CosineMSELoss
    from sbert.training import Trainer, TrainingConfig

    device = distributed_device("cuda" if args.gpus else "cpu")
    run = join_process_group(device) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else None
    pairs = read_stsb("train", args.data_dir)[: args.pairs]
    model = SentenceEncoder.from_pretrained(device=str(device), precision="float32", backend="torch")
    objective = CosineMSELoss(model, score_range=(0.0, 5.0))
    config = TrainingConfig(
        batch_size=args.batch_size, eval_steps=None, checkpoint_steps=None, show_progress_bar=False
    )
    seconds = 0.0
    for examples in (pairs[: 4 * args.batch_size], pairs):  # warm-up, then timed
        with tempfile.TemporaryDirectory() as output:
            if run is not None:
                dist.barrier()
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            Trainer(objective, examples, output, config).train()
            if device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
    if run is None or run.is_main:
        Path(args.result).write_text(json.dumps({"pairs_per_second": len(pairs) / seconds}))
    if run is not None:
        leave_process_group()


def launch(processes: int, threads: int, args: argparse.Namespace) -> float:
    """Pairs per second of one torchrun launch."""
    with tempfile.TemporaryDirectory() as folder:
        result = Path(folder) / "result.json"
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={processes}",
        ]
        command += [__file__, "--worker", "--result", str(result), "--pairs", str(args.pairs)]
        command += ["--batch-size", str(args.batch_size), "--data-dir", str(args.data_dir)]
        command += ["--gpus"] * bool(args.gpus)
        env = os.environ | {"OMP_NUM_THREADS": str(threads)}
        completed = subprocess.run(command, env=env, capture_output=True, text=True)
        if completed.returncode != 0:
            raise SystemExit(f"launch of {processes} process(es) failed:\n{completed.stderr[-3000:]}")
        return float(json.loads(result.read_text())["pairs_per_second"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", default=os.environ.get("SBERT_DATA"))
    parser.add_argument("--pairs", type=int, default=384, help="training pairs per timed run (default 384)")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch (default 32)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gpus", action="store_true", help="1 GPU against 2 GPUs, one process each")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    sides = {"1 process, 1 GPU": (1, 1), "2 processes, 2 GPUs": (2, 1)} if args.gpus else SIDES
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for repeat in range(args.repeats):
        for name in alternating_order(list(sides), repeat):
            rates[name].append(launch(*sides[name], args))
            print(f"repeat {repeat + 1}: {name}: {rates[name][-1]:.1f} pairs/s", file=sys.stderr)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(
        f"# train_ddp, {date.today()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    )
    print(f"# {args.pairs} STSb pairs, global batch {args.batch_size}, fp32, {args.repeats} repeats, median")
    print("| processes | pairs/s | repeats |")
    print("|---|---:|---|")
    for name, value in medians.items():
        print(f"| {name} | {value:.1f} | {', '.join(f'{v:.1f}' for v in rates[name])} |")


if __name__ == "__main__":
    main()
