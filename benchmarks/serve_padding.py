"""Padded tokens of the server's takes against direct ``encode()``'s, by take size (issue 53): the
STSb test sentences arrive as requests of ``--size`` sentences; each take of T sentences is sorted
by length and cut into batches of 32, as ``encode()`` cuts them; the figure is the padded tokens
(sentences × longest, summed over the batches) over the real ones. A take of all the sentences is
direct ``encode()``. No timing: it counts, so it needs no quiet machine.

    SBERT_DATA=/work/shared/data PYTHONPATH=src python benchmarks/serve_padding.py
"""

from __future__ import annotations

import argparse

import numpy as np

from sbert import SentenceEncoder
from sbert.base.batching import length_sorted_batches
from sbert.data import read_stsb


def padded_over_real(lengths: np.ndarray, take: int, batch_size: int) -> float:
    """Padded tokens over real tokens when takes of ``take`` sentences are cut into batches."""
    padded = 0
    for start in range(0, len(lengths), take):
        part = lengths[start : start + take]
        for batch in length_sorted_batches(part.tolist(), batch_size):
            padded += len(batch) * int(part[batch].max())  # sentences × longest
    return padded / int(lengths.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--sentences", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    pairs = read_stsb("test", args.data_dir)
    texts = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs])[: args.sentences]
    model = SentenceEncoder.from_pretrained()
    lengths = np.array([len(row) for row in model.token_ids(texts).ids])
    print(f"{len(texts)} sentences, {int(lengths.sum())} real tokens, batches of {args.batch_size}")
    for take in [32, 64, 128, 256, 512, 1024, len(texts)]:
        print(
            f"  takes of {take:5d} sentences: padded {padded_over_real(lengths, take, args.batch_size):.2f}× real"
        )


if __name__ == "__main__":
    main()
