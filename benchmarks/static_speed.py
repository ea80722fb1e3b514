"""Static model speed: sbert's StaticEncoder against sentence-transformers and model2vec, in one run.

Contenders, all on the STSb test sentences (both sides, 2,758), float32 on the CPU:

- ``sbert static``: :class:`sbert.static.StaticEncoder` of ``--model`` (a directory from ``sbert
  distill static``);
- ``model2vec``: model2vec's ``StaticModel`` holding THE SAME table and tokenizer (built from the
  loaded model's tensors, no truncation, no normalisation), so both compute the same vectors; the
  largest difference between the two is printed (model2vec drops ``[UNK]`` tokens from the mean,
  sbert counts them as sentence-transformers' ``StaticEmbedding`` does: sentences with one differ);
- ``st static``: sentence-transformers loading the same directory (its ``StaticEmbedding``);
- ``st MiniLM``: sentence-transformers' PyTorch float32 run of the bundled all-MiniLM-L6-v2, the
  teacher (batch 32, its default).

Each repeat runs every contender once, in alternating order, after a warm-up; a static contender
encodes the sentences ``--inner`` times per repeat so that its timing is not a few milliseconds.
Figures are medians of the repeats; each ratio is taken per repeat, then its median.

    flock /tmp/sbert-heavy.lock python benchmarks/static_speed.py --model static-256 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone

import numpy as np
import torch

from alternating import alternating_order
from encode_speed import cpu_name
from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.model.hub import bundled_model_path


def model2vec_twin(model: SentenceEncoder) -> object:
    """model2vec's ``StaticModel`` on ``model``'s table and tokenizer: the same vectors, its code."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    static = model.input_module
    table = static.embedding.weight.detach().numpy().copy()
    tokenizer = Tokenizer.from_str(static.tokenizer.to_str())
    return StaticModel(table, tokenizer, normalize=False, max_length=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="static model directory (sbert distill static)")
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--inner", type=int, default=20, help="passes per repeat of a static contender")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--skip-teacher", action="store_true", help="leave out the transformer (faster)")
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pairs = read_stsb("test", args.data_dir)
    sentences = [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]
    ours = SentenceEncoder.from_pretrained(args.model)
    if not ours.is_static:
        parser.error(f"{args.model} is not a static model")
    twin = model2vec_twin(ours)
    from sentence_transformers import SentenceTransformer

    st_static = SentenceTransformer(args.model, device="cpu")
    # (runner, passes per repeat)
    runners: dict[str, tuple[Callable[[], object], int]] = {
        "sbert static": (lambda: ours.encode(sentences), args.inner),
        "model2vec": (lambda: twin.encode(sentences), args.inner),  # type: ignore[attr-defined]
        "st static": (lambda: st_static.encode(sentences, batch_size=32), max(1, args.inner // 4)),
    }
    if not args.skip_teacher:
        teacher = SentenceTransformer(str(bundled_model_path()), device="cpu")
        runners["st MiniLM"] = (lambda: teacher.encode(sentences, batch_size=32), 1)

    a, b = np.asarray(ours.encode(sentences)), np.asarray(twin.encode(sentences))  # type: ignore[attr-defined]
    unk = ours.tokenizer.token_to_id("[UNK]")
    with_unk = sum(unk in ids for ids in ours.token_ids(sentences).ids) if unk is not None else 0
    same = np.abs(a - b).max(axis=1) <= 1e-5
    print(
        f"same vectors as model2vec: {int(same.sum())} of {len(sentences)} sentences within 1e-5 "
        f"({with_unk} hold [UNK]); largest difference {float(np.abs(a - b).max()):.2e}"
    )

    load_before = os.getloadavg()[0]
    for run, _ in runners.values():  # warm-up
        run()
    rates: dict[str, list[float]] = {name: [] for name in runners}
    for repeat in range(args.repeats):
        for name in alternating_order(list(runners), repeat):
            run, passes = runners[name]
            start = time.perf_counter()
            for _ in range(passes):
                run()
            rates[name].append(passes * len(sentences) / (time.perf_counter() - start))

    def ratios(over: str) -> list[float]:
        return [x / y for x, y in zip(rates["sbert static"], rates[over])]

    result = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(),
        "threads": args.threads,
        "model": args.model,
        "sentences": len(sentences),
        "repeats": args.repeats,
        "sentences_per_second": {name: statistics.median(values) for name, values in rates.items()},
        "ratio_sbert_static_over": {
            name: statistics.median(ratios(name)) for name in runners if name != "sbert static"
        },
        "same_vectors_as_model2vec": int(same.sum()),
        "load_average_1min": [load_before, os.getloadavg()[0]],  # before and after the timings
    }
    print(
        f"{result['date']}, {result['cpu']}, {args.threads} threads, {len(sentences)} STSb test sentences, "
        f"load average {load_before:.2f} before, {result['load_average_1min'][1]:.2f} after"
    )
    for name, values in rates.items():
        print(f"  {name:<14} {statistics.median(values):12.0f} sentences/s (median of {args.repeats})")
    for name, ratio in result["ratio_sbert_static_over"].items():
        per = ", ".join(f"{r:.2f}" for r in ratios(name))
        print(f"  sbert static / {name:<12} {ratio:8.2f}x (per repeat: {per})")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
