"""Encoding speed and quality of sbert's precisions against sentence-transformers, in one run.

Contenders, all on the bundled all-MiniLM-L6-v2 and the same sentences: sentence-transformers torch
fp32 (the reference every ratio is taken to), sentence-transformers under the caller's
``torch.autocast("cpu", dtype=torch.bfloat16)``, and sbert at each precision. Each repeat runs every
contender once, in alternating order, after a warm-up; figures are medians of the repeats and each
ratio is taken per repeat, so machine noise hits both sides alike. Quality: STSb test Spearman × 100
(sbert.evaluation.SimilarityEvaluator) and the largest cosine distance of any embedding to
sentence-transformers fp32.

    flock /tmp/sbert-heavy.lock python benchmarks/encode_speed.py --data-dir ../shared/data --repeats 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import random
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from alternating import alternating_order
from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.data.paths import dataset_file
from sbert.evaluation import SimilarityEvaluator
from sbert.inference.precision import openvino_installed
from sbert.model.hub import bundled_model_path

# Sources of the mixed-length set: short SNLI captions, one-sentence movie reviews, plot and opinion
# sentences, and customer reviews (a few words to over a hundred tokens).
MIXED_SOURCES = (
    "snli_senteval/s1.dev",
    "senteval_transfer/MR/rt-polarity.pos",
    "senteval_transfer/SUBJ/subj.objective",
    "senteval_transfer/CR/custrev.pos",
)

Encode = Callable[[list[str]], np.ndarray]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--mixed", type=int, default=10_000, help="size of the mixed-length set (0: skip)")
    parser.add_argument("--output", default="benchmarks/encode_speed.json", help="JSON file for the figures")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pairs = read_stsb("test", args.data_dir)
    sets = {"STSb test": [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]}
    if args.mixed:
        sets[f"{args.mixed} mixed"] = mixed_sentences(args.data_dir, args.mixed)
    contenders = build_contenders(args.batch_size)
    evaluator = SimilarityEvaluator(pairs, name="stsb-test", batch_size=args.batch_size)

    results: dict[str, object] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(),
        "threads": args.threads,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "torch": torch.__version__,
        "sets": {},
    }
    for set_name, sentences in sets.items():
        results["sets"][set_name] = measure(contenders, sentences, args.repeats)  # type: ignore[index]
    spearman = {name: evaluator(_Wrapped(encode))["spearman_cosine"] for name, encode in contenders.items()}
    results["stsb_test_spearman"] = spearman
    Path(args.output).write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(markdown(results))


def build_contenders(batch_size: int) -> dict[str, Encode]:
    path = str(bundled_model_path())
    theirs = SentenceTransformer(path, device="cpu")

    def st(autocast: bool) -> Encode:
        def encode(sentences: list[str]) -> np.ndarray:
            context = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
            with context:
                return np.asarray(theirs.encode(sentences, batch_size=batch_size, show_progress_bar=False))

        return encode

    contenders = {
        "sentence-transformers fp32": st(autocast=False),
        "sentence-transformers + bf16 autocast": st(autocast=True),
    }
    asked = [("float32", "torch"), ("auto", "torch")]
    if openvino_installed():
        asked += [
            ("float32", "openvino"),
            ("bfloat16", "openvino"),
            ("auto", "openvino"),
            ("int8", "openvino"),
        ]
    for precision, backend in asked:
        model = SentenceEncoder.from_pretrained(device="cpu", precision=precision, backend=backend)
        label = f"sbert {'auto: ' if precision == 'auto' else ''}{model.precision} ({model.backend})"
        # A request that falls back to one already listed (bf16 without native bf16, ...) is not repeated.
        if not any(name.endswith(f" {model.precision} ({model.backend})") for name in contenders):
            contenders[label] = _sbert_encode(model, batch_size)
    return contenders


def _sbert_encode(model: SentenceEncoder, batch_size: int) -> Encode:
    def encode(sentences: list[str]) -> np.ndarray:
        return np.asarray(model.encode(sentences, batch_size=batch_size, show_progress_bar=False))

    return encode


def measure(contenders: dict[str, Encode], sentences: list[str], repeats: int) -> dict[str, dict[str, float]]:
    """Sentences/s (median), ratio to the first contender (median of per-repeat ratios), cosine distance."""
    outputs = {name: encode(sentences) for name, encode in contenders.items()}  # warm-up + embeddings
    reference_name = next(iter(contenders))
    reference = outputs[reference_name]
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for repeat in range(repeats):
        names = alternating_order(list(contenders), repeat)
        for name in names:
            start = time.perf_counter()
            contenders[name](sentences)
            rates[name].append(len(sentences) / (time.perf_counter() - start))
    figures = {}
    for name in contenders:
        ratios = [ours / ref for ours, ref in zip(rates[name], rates[reference_name])]
        figures[name] = {
            "sentences": len(sentences),
            "sentences_per_second": statistics.median(rates[name]),
            "ratio": statistics.median(ratios),
            "max_cosine_distance": max_cosine_distance(outputs[name], reference),
        }
    return figures


def max_cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    cosines = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float((1 - cosines).max())


class _Wrapped:
    """Adapts an ``Encode`` function to the evaluator's ``encode(sentences, batch_size)``."""

    def __init__(self, encode: Encode) -> None:
        self.encode_function = encode

    def encode(self, sentences: list[str], batch_size: int = 32) -> np.ndarray:
        return self.encode_function(sentences)


def mixed_sentences(data_dir: str | None, count: int) -> list[str]:
    """``count`` distinct non-empty lines drawn evenly (seeded) from :data:`MIXED_SOURCES`."""
    rng = random.Random(0)
    chosen: list[str] = []
    for source in MIXED_SOURCES:
        path = dataset_file(data_dir, source, "mixed-length sentences")
        lines = list(
            dict.fromkeys(
                line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
            )
        )
        lines = [line for line in lines if line]
        chosen += rng.sample(lines, min(len(lines), count // len(MIXED_SOURCES)))
    rng.shuffle(chosen)
    return chosen[:count]


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


def markdown(results: dict) -> str:  # type: ignore[type-arg]
    sets = list(results["sets"])
    header = "| backend | " + " | ".join(f"{s}: sentences/s (ratio)" for s in sets)
    lines = [
        f"{results['date']}, {results['cpu']}, {results['threads']} threads, batch {results['batch_size']}, "
        f"median of {results['repeats']} repeats; bundled all-MiniLM-L6-v2",
        "",
        header + " | STSb test Spearman | max cosine distance to fp32 |",
        "|---" * (len(sets) + 3) + "|",
    ]
    for name in results["stsb_test_spearman"]:
        cells = [
            f"{results['sets'][s][name]['sentences_per_second']:.0f} ({results['sets'][s][name]['ratio']:.2f}×)"
            for s in sets
        ]
        distance = max(results["sets"][s][name]["max_cosine_distance"] for s in sets)
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {results['stsb_test_spearman'][name]:.2f} | {distance:.1e} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
