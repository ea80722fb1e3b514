"""Real and derived sentence vectors for ``benchmarks/index_scale.py``, written to disk in chunks.

1. ``real``: the distinct sentences of the shared data (STSb, SICK, STS12-16, SNLI dev/test, the
   SentEval transfer sets), encoded once with the bundled model (its default precision), unit
   length, in a seeded random order and in chunks (``--gather`` uses the chunks done so far).
   1,000 of them (seeded) are held out as queries; the rest are the real corpus.
2. ``derived``: a corpus of N vectors = the real corpus, then new vectors each made from a random
   real vector ``a`` and one of its 10 nearest real neighbours ``b``:
   ``normalise(w·a + (1 − w)·b + σ·g)`` with ``w ~ U(0.5, 1)``, ``g`` Gaussian and ``σ = 0.02``
   per coordinate (about cosine 0.9 to ``a``), so the new points lie among real sentences, in the
   directions real sentences occupy, and are not copies.
3. ``truth``: exact float32 top-10 of every query over the corpus, computed chunk by chunk.

Nothing is held whole in memory: vectors are written to ``.npy`` files opened as memory maps.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import numpy as np

QUERIES = 1000
NEIGHBOURS = 10
NOISE = 0.02
CHUNK = 200_000
REAL_CHUNK = 8192


def distinct_sentences(data: Path) -> list[str]:
    """Every distinct non-empty sentence of the shared data, in a fixed (sorted) order."""
    found: set[str] = set()

    def add(text: str) -> None:
        text = text.strip()
        if text:
            found.add(text)

    for name in ("sts-train.csv", "sts-dev.csv", "sts-test.csv"):
        for line in (data / "stsb/original" / name).read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            if len(fields) >= 7:
                add(fields[5])
                add(fields[6])
    with (data / "sick/SICK.txt").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            add(row["sentence_A"])
            add(row["sentence_B"])
    for path in sorted((data / "sts12-16/original").rglob("*input*.txt")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            for text in line.split("\t")[:2]:
                add(text)
    for path in sorted((data / "snli_senteval").glob("s[12].*")):
        for line in path.read_text(encoding="utf-8").splitlines():
            add(line)
    for path in sorted((data / "senteval_transfer").rglob("*")):
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if "TREC" in str(path):
                line = line.split(" ", 1)[-1]
            elif "MRPC" in str(path):
                parts = line.split("\t")
                for text in parts[3:5]:
                    add(text)
                continue
            add(line.split("\t")[0])
    return sorted(found)


def prepare_real(data: Path, cache: Path, limit: int | None = None) -> None:
    """Encode the sentences in a seeded random order, chunk by chunk (each chunk saved as it ends),
    then gather the finished chunks into ``real.npy``: a run stopped early still leaves a real set,
    the first chunks of the random order (``limit`` stops after that many sentences)."""
    from sbert import SentenceEncoder

    cache.mkdir(parents=True, exist_ok=True)
    if (cache / "real.npy").exists():
        return
    sentences = distinct_sentences(data)
    order = np.random.default_rng(1).permutation(len(sentences))
    print(f"{len(sentences)} distinct sentences", file=sys.stderr)
    model = SentenceEncoder.from_pretrained()
    parts = cache / "real-parts"
    parts.mkdir(exist_ok=True)
    total = len(sentences) if limit is None else min(limit, len(sentences))
    for number, start in enumerate(range(0, total, REAL_CHUNK)):
        part = parts / f"{number:04d}.npy"
        if part.exists():
            continue
        chunk = [sentences[i] for i in order[start : min(start + REAL_CHUNK, total)]]
        begin = time.perf_counter()
        vectors = model.encode(chunk, batch_size=64, normalize=True)
        np.save(parts / "partial.npy", np.asarray(vectors, dtype=np.float32), allow_pickle=False)
        (parts / "partial.npy").rename(part)
        print(
            f"encoded {start + len(chunk):,}/{total:,} ({time.perf_counter() - begin:.0f} s)", file=sys.stderr
        )
    gather_real(cache)


def gather_real(cache: Path) -> None:
    """``real.npy`` from the finished chunks, in order."""
    parts = sorted((cache / "real-parts").glob("[0-9]*.npy"))
    np.save(cache / "real.tmp.npy", np.concatenate([np.load(p) for p in parts]), allow_pickle=False)
    (cache / "real.tmp.npy").rename(cache / "real.npy")


def held_out_queries(cache: Path) -> np.ndarray:
    """The (1000, dim) query vectors of :func:`split_real`, read without loading the real set."""
    real = np.load(cache / "real.npy", mmap_mode="r", allow_pickle=False)
    return np.asarray(real[np.random.default_rng(0).permutation(len(real))[:QUERIES]])


def split_real(cache: Path) -> tuple[np.ndarray, np.ndarray]:
    """(queries (1000, dim), real corpus (n − 1000, dim)), the split seeded."""
    real = np.load(cache / "real.npy", allow_pickle=False)
    order = np.random.default_rng(0).permutation(len(real))
    return real[order[:QUERIES]], real[np.sort(order[QUERIES:])]


def real_neighbours(corpus: np.ndarray) -> np.ndarray:
    """(n, 10) positions of each real vector's near real vectors (itself excluded).

    Found with an IVF index (1024 lists, 16 probed): near neighbours are all the mixing needs, and
    an exact all-pairs pass over the real set costs minutes on two cores.
    """
    import faiss

    quantizer = faiss.IndexFlatIP(corpus.shape[1])
    index = faiss.IndexIVFFlat(quantizer, corpus.shape[1], 1024, faiss.METRIC_INNER_PRODUCT)
    index.train(corpus[:: max(1, len(corpus) // 65536)])
    index.add(corpus)
    index.nprobe = 16
    _, positions = index.search(corpus, NEIGHBOURS + 1)
    return np.where(positions[:, 1:] >= 0, positions[:, 1:], positions[:, :1])


def prepare_corpus(cache: Path, size: int) -> Path:
    """``corpus-{size}.npy``: the real corpus then derived vectors, written chunk by chunk."""
    path = cache / f"corpus-{size}.npy"
    if path.exists():
        return path
    _, real = split_real(cache)
    neighbours_file = cache / "neighbours.npy"
    if not neighbours_file.exists():
        np.save(neighbours_file, real_neighbours(real), allow_pickle=False)
    neighbours = np.load(neighbours_file, allow_pickle=False)
    partial = cache / f"corpus-{size}.tmp.npy"
    out = np.lib.format.open_memmap(partial, mode="w+", dtype=np.float32, shape=(size, real.shape[1]))
    out[: len(real)] = real
    rng = np.random.default_rng(size)
    for start in range(len(real), size, CHUNK):
        n = min(CHUNK, size - start)
        a = rng.integers(0, len(real), n)
        b = neighbours[a, rng.integers(0, NEIGHBOURS, n)]
        w = rng.uniform(0.5, 1.0, (n, 1)).astype(np.float32)
        mixed = w * real[a] + (1 - w) * real[b] + NOISE * rng.standard_normal((n, real.shape[1]), np.float32)
        out[start : start + n] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
        print(f"\rderived {start + n:,}/{size:,}", end="", file=sys.stderr)
    out.flush()
    del out
    partial.rename(path)
    print(file=sys.stderr)
    return path


def exact_top10(cache: Path, corpus_file: Path) -> np.ndarray:
    """(1000, 10) exact float32 top-10 positions of the queries over a corpus file, chunk by chunk."""
    truth_file = cache / f"truth-{corpus_file.stem}.npy"
    if truth_file.exists():
        return np.load(truth_file, allow_pickle=False)
    queries, _ = split_real(cache)
    corpus = np.load(corpus_file, mmap_mode="r", allow_pickle=False)
    best_scores = np.full((len(queries), NEIGHBOURS), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), NEIGHBOURS), dtype=np.int64)
    for start in range(0, len(corpus), CHUNK):
        scores = queries @ np.asarray(corpus[start : start + CHUNK]).T  # (queries, chunk)
        top = np.argpartition(-scores, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
        all_scores = np.concatenate([best_scores, np.take_along_axis(scores, top, 1)], axis=1)
        all_ids = np.concatenate([best_ids, top + start], axis=1)
        keep = np.argsort(-all_scores, axis=1)[:, :NEIGHBOURS]
        best_scores = np.take_along_axis(all_scores, keep, 1)
        best_ids = np.take_along_axis(all_ids, keep, 1)
    np.save(truth_file, best_ids, allow_pickle=False)
    return best_ids


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--cache", type=Path, default=Path("/work/wt/cache/index_scale"))
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 10_000_000])
    parser.add_argument("--real-limit", type=int, default=None, help="encode only this many sentences")
    parser.add_argument("--gather", action="store_true", help="use the chunks encoded so far")
    args = parser.parse_args()
    if args.gather:
        gather_real(args.cache)
    prepare_real(args.data_dir, args.cache, args.real_limit)
    _, real_corpus = split_real(args.cache)
    np.save(args.cache / "corpus-real.npy", real_corpus, allow_pickle=False)
    exact_top10(args.cache, args.cache / "corpus-real.npy")
    for size in args.sizes:
        exact_top10(args.cache, prepare_corpus(args.cache, size))
