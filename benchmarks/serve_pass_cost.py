"""The server's cuts of one request on PyTorch: OpenVINO's cost per pass (24 tokens) against fixed
batches of 32 (what ``encode()`` cuts, and what ``sbert serve`` now uses off OpenVINO).

In-process, no HTTP: 32-sentence requests of STSb test (the 1-layer stand-in of
``benchmarks/standin.py`` by default, float32 on PyTorch) run through ``encode_token_ids`` as the
server's batcher runs them, each cut alternating with the other, median of ``--repeats``::

    OMP_NUM_THREADS=1 SBERT_DATA=/work/shared/data PYTHONPATH=src:benchmarks python benchmarks/serve_pass_cost.py
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
from pathlib import Path

from alternating import alternating_rates
from sbert import SentenceEncoder
from sbert.base.batching import BATCH_COST_TOKENS
from sbert.data import read_stsb
from sbert.inference.runner import RunOptions
from standin import bundled_standin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--model", default=None, help="a model folder (default: the 1-layer stand-in)")
    parser.add_argument("--sentences", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    pairs = read_stsb("test", args.data_dir)
    texts = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs])[: args.sentences]
    with tempfile.TemporaryDirectory() as work:
        path = args.model or bundled_standin(Path(work) / "standin")
        model = SentenceEncoder.from_pretrained(path, device="cpu", precision="float32", backend="torch")
    model.encode(texts[:256], show_progress_bar=False)
    requests = [list(model.input_module.whole_token_ids(texts[i : i + 32])) for i in range(0, len(texts), 32)]

    def served(cost: int | None) -> None:
        for ids in requests:
            model.encode_token_ids(ids, RunOptions(32, 8192, cost, True)).numpy()

    runs = {
        f"cost {BATCH_COST_TOKENS} tokens a pass": lambda: served(BATCH_COST_TOKENS),
        "batches of 32": lambda: served(None),
    }
    rates = alternating_rates(runs, args.repeats, len(texts))
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"
    )
    for name, rate in rates.items():
        print(f"{name}: {statistics.median(rate):,.0f} sentences/s (median of {args.repeats})")


if __name__ == "__main__":
    main()
