"""Where the cross-encoder's float32 time goes, and what changes it: padded tokens and GFLOP of each
side's batches (sbert sorts by tokens, sentence-transformers by characters), then sbert float32 at
batch 32, 64 and 128 and on packed rows against sentence-transformers' ``predict`` (batch 32), with
each tokenizer alone; one run, alternating, median of the repeats. Every sbert variant's largest
logit difference from sentence-transformers is printed first (float32 must stay exact).

    flock /tmp/sbert-heavy.lock python benchmarks/cross_encoder_float32.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import CrossEncoder as TheirCrossEncoder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternating import alternating_rates
from sbert import CrossEncoder
from sbert.data import read_stsb

# Matrix-product FLOPs a token in all-MiniLM-L6-v2: 6 layers × 2 × (4 projections 384² + FFN 2 · 384 · 1536).
FLOP_PER_TOKEN = 6 * 2 * (4 * 384 * 384 + 2 * 384 * 1536)


def padded_tokens(lengths: np.ndarray, order: np.ndarray, batch_size: int) -> int:
    """Tokens after padding each batch of ``order`` to its longest."""
    return sum(
        int(lengths[order[i : i + batch_size]].max()) * len(order[i : i + batch_size])
        for i in range(0, len(order), batch_size)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(2)
    pairs = [(p.sentence1, p.sentence2) for p in read_stsb("test", args.data_dir)]
    with tempfile.TemporaryDirectory() as folder:
        torch.manual_seed(0)
        path = str(Path(folder) / "ce")
        CrossEncoder.from_pretrained(num_labels=1, device="cpu", precision="float32").save(path)
        ours = CrossEncoder(path, device="cpu", precision="float32")
        theirs = TheirCrossEncoder(path, device="cpu")
    lengths = np.array(ours.tokenize(pairs).lengths)
    by_chars = np.argsort([-len(a) - len(b) for a, b in pairs])
    for name, order in (
        ("sbert (tokens)", np.argsort(-lengths)),
        ("sentence-transformers (characters)", by_chars),
    ):
        padded = padded_tokens(lengths, order, 32)
        print(f"{name}: {lengths.sum()} tokens, {padded} padded, {padded * FLOP_PER_TOKEN / 1e9:.0f} GFLOP")
    reference = theirs.predict(
        pairs, batch_size=32, show_progress_bar=False, activation_fn=torch.nn.Identity()
    )
    runners: dict[str, Callable[[], object]] = {
        "sentence-transformers": lambda: theirs.predict(pairs, batch_size=32, show_progress_bar=False)
    }
    for batch_size, pack in ((32, False), (64, False), (128, False), (32, True)):
        logits = ours.logits(pairs, batch_size, show_progress_bar=False, pack=pack).numpy()[:, 0]
        name = f"sbert float32 batch {batch_size}{' packed' if pack else ''}"
        print(f"{name}: max |logit difference| {np.abs(logits - reference).max():.2g}")
        runners[name] = partial(ours.logits, pairs, batch_size, show_progress_bar=False, pack=pack)
    runners["sbert tokenizer"] = lambda: ours.tokenize(pairs)
    runners["their tokenizer"] = lambda: theirs.tokenizer(
        [a for a, _ in pairs],
        [b for _, b in pairs],
        padding=True,
        truncation="longest_first",
        return_tensors="pt",
    )
    for run in runners.values():  # warm-up
        run()
    rates = alternating_rates(runners, args.repeats, len(pairs))
    for name, values in rates.items():
        ratio = statistics.median(a / b for a, b in zip(values, rates["sentence-transformers"]))
        print(f"  {name:<34} {statistics.median(values):9.1f} pairs/s  {ratio:6.2f}×")


if __name__ == "__main__":
    main()
