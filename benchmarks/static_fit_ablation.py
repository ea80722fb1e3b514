"""Why the static fit centres its targets as it does: variants of the fitting step, STSb dev (and test).

The teacher (the bundled all-MiniLM-L6-v2, float32) embeds the corpus and the STSb dev and test
sentences once; the vectors are kept in ``--cache`` (resumable in parts of 10,000 sentences, so the
slow pass can be spread over several short runs with ``--budget``). Then each variant fits a copy of
the 256-d distilled table and prints STSb dev Spearman after every epoch (test at the end). Targets:

- ``token-mean``: the teacher's vectors minus the token vectors' mean, by the distillation's PCA
  (what sbert did before #26);
- ``sentence-mean``: minus the corpus' mean sentence vector, same PCA components (what
  :mod:`sbert.static.fit` does now);
- ``sentence-pca`` (optionally ``whiten``): minus the same mean, by a PCA of the corpus' sentence
  vectors.

    python benchmarks/static_corpus.py static_corpus.txt
    flock /tmp/sbert-heavy.lock python benchmarks/static_fit_ablation.py static_corpus.txt \\
        --variants '{"targets": "token-mean"}' '{"targets": "sentence-mean"}' --epochs 5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr

from sbert import SentenceEncoder
from sbert.data import read_stsb
from sbert.static.distill import distill_table

PART = 10_000


def cached_vectors(
    model: SentenceEncoder, texts: list[str], folder: Path, name: str, deadline: float
) -> np.ndarray | None:
    """The teacher's vectors of ``texts``, computed in parts kept in ``folder``; ``None`` past ``deadline``."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    for index, start in enumerate(range(0, len(texts), PART)):
        file = folder / f"{name}-{index:04d}.npy"
        if not file.exists():
            if time.time() > deadline:
                return None
            np.save(file, model.encode(texts[start : start + PART], batch_size=64, show_progress_bar=False))
        parts.append(np.load(file))
    return np.concatenate(parts)


def spearman(vectors: np.ndarray, scores: np.ndarray) -> float:
    half = len(scores)
    a, b = vectors[:half], vectors[half:]
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)
    return float(100 * spearmanr(cosine, scores).statistic)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", help="one sentence a line (benchmarks/static_corpus.py)")
    parser.add_argument("--cache", default="static-fit-cache", help="folder for the teacher's vectors")
    parser.add_argument("--budget", type=float, default=1e9, help="seconds for the teacher pass this run")
    parser.add_argument("--variants", nargs="*", default=['{"targets": "sentence-mean"}'])
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    started = time.time()
    cache = Path(args.cache)
    teacher = SentenceEncoder.from_pretrained(device="cpu", precision="float32", backend="torch")
    corpus = [line for line in Path(args.corpus).read_text(encoding="utf-8").splitlines() if line.strip()]
    splits = {}
    for split in ("dev", "test"):
        pairs = read_stsb(split)
        texts = [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]
        splits[split] = (texts, np.array([p.score for p in pairs]))
    deadline = started + args.budget
    teacher_y = cached_vectors(teacher, corpus, cache, "corpus", deadline)
    if teacher_y is None:
        print(f"teacher pass unfinished after {args.budget:.0f} s: run again to continue")
        return
    static, projection = distill_table(teacher, 256, show_progress_bar=False)
    table0 = static.input_module.embedding.weight.detach().clone()
    ids, lengths, _ = static.input_module.token_ids(corpus)
    starts = np.concatenate([[0], np.cumsum(lengths)])[:-1]
    usable = np.flatnonzero(lengths > 0)

    def evaluate(table: torch.Tensor, split: str) -> float:
        texts, scores = splits[split]
        with torch.no_grad():
            static.input_module.embedding.weight.copy_(table)
        return spearman(static.encode(texts), scores)

    print(f"corpus {len(corpus)} sentences; distilled table, STSb dev {evaluate(table0, 'dev'):.2f}")
    for spec in args.variants:
        variant: dict[str, Any] = {"targets": "sentence-mean", "lr": 0.01, "batch": 256, **json.loads(spec)}
        mean = projection.mean if variant["targets"] == "token-mean" else teacher_y.mean(0)
        components = projection.components
        if variant["targets"] == "sentence-pca":
            eigenvalues, eigenvectors = np.linalg.eigh(np.cov((teacher_y - mean).T))
            components = eigenvectors[:, ::-1][:, :256].T
            if variant.get("whiten"):
                components = components / np.sqrt(eigenvalues[::-1][:256])[:, None]
        targets = torch.from_numpy(((teacher_y - mean) @ components.T).astype(np.float32))
        weight = torch.nn.Parameter(table0.clone())
        optimizer = torch.optim.SparseAdam([weight], lr=variant["lr"])
        generator = torch.Generator().manual_seed(0)
        dev = []
        for _ in range(args.epochs):
            order = usable[torch.randperm(len(usable), generator=generator).numpy()]
            for start in range(0, len(order), variant["batch"]):
                rows = order[start : start + variant["batch"]]
                flat = np.concatenate([ids[s : s + n] for s, n in zip(starts[rows], lengths[rows])])
                offsets = np.concatenate([[0], np.cumsum(lengths[rows])[:-1]])
                vectors = torch.nn.functional.embedding_bag(
                    torch.from_numpy(flat), weight, torch.from_numpy(offsets), mode="mean", sparse=True
                )
                loss = 1 - torch.nn.functional.cosine_similarity(vectors, targets[rows]).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            dev.append(round(evaluate(weight.detach(), "dev"), 2))
        test = round(evaluate(weight.detach(), "test"), 2)
        print(json.dumps({**variant, "epochs": args.epochs, "dev_by_epoch": dev, "test": test}), flush=True)


if __name__ == "__main__":
    main()
