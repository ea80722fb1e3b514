"""Which projections ``mixed`` may run in int8: each group quantized alone, against fp32 and bf16.

For each group of matrix products (BERT names), an OpenVINO engine runs that group in static int8
(NNCF, SmoothQuant 0.8, the bundled calibration set) and everything else in bf16, on the STSb test
sentences: the largest cosine distance of a vector to PyTorch fp32, STSb test Spearman × 100, and
speed relative to plain bf16 (both in one run, alternating order, median of per-repeat ratios).
The groups that move vectors least make :data:`sbert.inference.openvino.engine.MIXED_INT8_LAYERS`.
Run it on your own model (``--model``) before trusting ``auto`` with it.

    flock /tmp/sbert-heavy.lock python benchmarks/mixed_layers.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import os
import re
import statistics

import numpy as np
import torch

from alternating import alternating_rates
from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.evaluation import SimilarityEvaluator
from sbert.evaluation.sts import PrecomputedEncoder
from sbert.inference.openvino import engine as openvino_engine

GROUPS = {
    "query + key + value": r"attention\.self\.(query|key|value)/",
    "feed-forward input": r"intermediate\.dense/",
    "attention output": r"attention\.output\.dense/",
    "feed-forward output": r"layer\.\d+\.output\.dense/",
    "query + key + value + feed-forward input": r"attention\.self\.(query|key|value)/|intermediate\.dense/",
    "mixed: query + key + feed-forward input": openvino_engine.MIXED_INT8_LAYERS.pattern,
    "every projection": r"/aten::linear/",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--model", default=None, help="model (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ["SBERT_CACHE_DIR"] = "off"  # seven trial graphs have no place in the user's cache

    pairs = read_stsb("test", args.data_dir)
    sentences = sorted({s for p in pairs for s in (p.sentence1, p.sentence2)})
    exact = SentenceEncoder.from_pretrained(args.model, device="cpu", precision="float32", backend="torch")
    reference = np.asarray(exact.encode(sentences, show_progress_bar=False))
    models = {"bf16": SentenceEncoder.from_pretrained(args.model, device="cpu", precision="bfloat16")}
    for name, pattern in GROUPS.items():
        openvino_engine.MIXED_INT8_LAYERS = re.compile(pattern)
        models[name] = SentenceEncoder.from_pretrained(args.model, device="cpu", precision="mixed")
        models[name].encode(sentences[:2])  # calibrates now, with this pattern

    evaluator = SimilarityEvaluator(pairs, name="stsb-test")
    print(f"{len(sentences)} STSb test sentences, {args.threads} threads, median of {args.repeats} repeats")
    print("| int8 on | max cosine distance to fp32 | STSb Spearman | speed vs bf16 |\n|---|---|---|---|")
    runners = {
        name: (lambda m=model: m.encode(sentences, show_progress_bar=False)) for name, model in models.items()
    }
    rates = alternating_rates(runners, args.repeats, len(sentences))
    for name, model in models.items():
        vectors = np.asarray(model.encode(sentences, show_progress_bar=False))
        cosines = (
            (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
        )
        spearman = evaluator(PrecomputedEncoder(sentences, vectors))["spearman_cosine"]
        speed = statistics.median(ours / bf16 for ours, bf16 in zip(rates[name], rates["bf16"]))
        print(
            f"| {'nothing (bf16)' if name == 'bf16' else name} | {1 - cosines.min():.4f} | {spearman:.2f} | {speed:.2f}× |"
        )


if __name__ == "__main__":
    main()
