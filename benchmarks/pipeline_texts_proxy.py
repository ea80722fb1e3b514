"""A CPU proxy of the GPU pipeline's host limit (issue 43): texts against token ids, with a model so small
that its compute is negligible, as all-MiniLM-L6-v2's is on an H200 next to the host's work.

The pipeline (``sbert.inference.cuda.pipeline.CudaPipeline``, batches of 16,384 tokens, no graphs)
runs a random 1-layer BERT of hidden size 32 with all-MiniLM-L6-v2's tokenizer over STSb test ×8
(22,064 sentences), on token ids and on texts; and the tokenizing alone (``tokenized_chunks``).
Sentences/s, median of ``--repeats``, alternating::

    SBERT_DATA=/work/shared/data PYTHONPATH=src:benchmarks python benchmarks/pipeline_texts_proxy.py

It reads the model files from ``--carry`` (``benchmarks/gpu.py --prepare .gpu-carry``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import torch

from alternating import alternating_rates
from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.inference.cuda.pipeline import CudaPipeline, PipelineOptions, RunOptions
from standin import standin_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--carry", type=Path, default=Path(".gpu-carry"))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--budget", type=int, default=16384, help="tokens a batch")
    args = parser.parse_args()
    # One torch thread: the model's compute is the device's stand-in, and two OpenMP threads spinning
    # against the tokenizing and host threads on a 2-core machine cost 10× on each tiny matmul.
    torch.set_num_threads(1)
    pairs = read_stsb("test", args.carry)
    sentences = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]) * 8
    with tempfile.TemporaryDirectory() as work:
        model_dir = standin_model(args.carry / "model", Path(work) / "model")
        model = SentenceEncoder.from_pretrained(model_dir, device="cpu", precision="float32", backend="torch")
    options = PipelineOptions(max_batch_tokens=args.budget, graphs=False)
    pipeline = CudaPipeline(model.transformer, model.pooling, model.after_pooling, torch.float32, options)
    ids = model.token_ids(sentences).ids

    def tokenize(texts: list[str]) -> list[list[int]]:
        return list(model.token_ids(texts).ids)

    def none(done: int) -> None:
        return None

    runs = {
        "pipeline_on_ids": lambda: pipeline.run(ids, RunOptions(), none),
        "pipeline_on_texts": lambda: pipeline.run_texts(sentences, tokenize, RunOptions(), none),
        f"tokenize_only_{pipeline.tokenize_threads}_threads": lambda: list(
            pipeline.tokenized_chunks(sentences, tokenize)
        ),
    }
    for run in runs.values():
        run()  # warm-up: pools, tokenizer copies
    rates = alternating_rates(runs, args.repeats, len(sentences))
    print(f"{os.cpu_count()} cores, TOKENIZERS_PARALLELISM={os.environ.get('TOKENIZERS_PARALLELISM')}")
    for name, rate in rates.items():
        print(f"{name}: {statistics.median(rate):,.0f} sentences/s")


if __name__ == "__main__":
    main()
