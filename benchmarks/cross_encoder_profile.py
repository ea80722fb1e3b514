"""Where ``CrossEncoder.predict``'s time goes on this machine: a cProfile of one call over the STSb
test pairs, batch 32, after a warm-up, the default plan (the model as ``cross_encoder_speed.py``
makes it: the bundled all-MiniLM-L6-v2 with a new seeded one-label head).

    SBERT_DATA=../shared/data PYTHONPATH=src python benchmarks/cross_encoder_profile.py
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time

import torch

from sbert import CrossEncoder
from sbert.data import read_stsb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("SBERT_DATA"), help="default: $SBERT_DATA")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lines", type=int, default=15, help="profile lines to print")
    args = parser.parse_args()
    if not args.data_dir:
        parser.error("give --data-dir or set SBERT_DATA")
    pairs = [(p.sentence1, p.sentence2) for p in read_stsb("test", args.data_dir)]
    with tempfile.TemporaryDirectory() as folder:
        torch.manual_seed(0)
        CrossEncoder.from_pretrained(num_labels=1, device="cpu", precision="float32").save(folder + "/ce")
        model = CrossEncoder(folder + "/ce", device="cpu")
        model.predict(pairs[:64], batch_size=args.batch_size)  # warm-up: compile, first allocations
        print(f"{len(pairs)} pairs, batch {args.batch_size}; plan: {model.plan}")
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        model.predict(pairs, batch_size=args.batch_size, show_progress_bar=False)
        profile.disable()
        print(f"{time.perf_counter() - start:.2f} s wall")
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.lines)


if __name__ == "__main__":
    main()
