"""The cascade static → transformer against each model alone: NDCG@10 and per-query latency.

On the proxy retrieval sets (``sbert.data.beir.proxy_set``), four ways to search:

- ``static``: exact search of the static model's vectors (``--static``, from ``sbert distill static``);
- ``transformer``: exact search of the transformer's vectors (``--rescorer``, default the bundled
  all-MiniLM-L6-v2): the corpus embedded by the transformer ahead of time;
- ``cascade@N``: the static model's N nearest, re-ranked by the transformer's cosine
  (:func:`sbert.index.cascade.cascade_search`): only N texts per query go through the
  transformer, at query time, and the corpus has no transformer index.

Quality: every query of the set. The cascade's ranked lists are computed from the transformer's
corpus vectors restricted to each query's N candidates, which is what ``rerank`` computes from the
candidates' texts (it embeds the same texts with the same model); the latency pass checks it by
running the real ``cascade_search`` and counting the queries whose top 10 agree.

Also the seconds each model takes to embed the whole set (the index the first stage needs).

Latency: ``--latency-queries`` queries, one at a time, each contender per query in alternating order
(encode the query, search a flat ``VectorIndex``; the cascade also embeds its N candidate texts):
median and mean milliseconds.

    flock /tmp/sbert-heavy.lock python benchmarks/cascade.py --static /work/static/static-256
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

from alternating import alternating_order
from encode_speed import cpu_name
from sbert import SentenceEncoder
from sbert.data.beir import proxy_set
from sbert.embeddings.search import semantic_search
from sbert.evaluation.retrieval import EmbeddedSet, embed_set, retrieval_metrics, search_and_score
from sbert.index import VectorIndex
from sbert.index.cascade import cascade_search

TOP_K = 10
REPORTED = ("ndcg@10", "mrr@10", "recall@10")


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def cascade_run(first: EmbeddedSet, second: EmbeddedSet, candidates: int) -> tuple[dict[str, Any], float]:
    """The cascade's metrics over every query, and the share of relevant documents among the candidates."""
    hits = semantic_search(first.queries, first.documents, top_k=candidates)
    queries, documents = unit(np.asarray(second.queries)), unit(np.asarray(second.documents))
    run: dict[str, dict[str, float]] = {}
    found = wanted = 0
    qrels = first.dataset.qrels
    for query_id, row, query in zip(first.query_ids, hits, queries):
        ids = np.array(sorted(hit.corpus_id for hit in row))  # ascending: ties keep the lower id
        scores = documents[ids] @ query
        order = np.argsort(-scores, kind="stable")[:TOP_K]
        run[query_id] = {first.doc_ids[ids[i]]: float(scores[i]) for i in order}
        relevant = {doc for doc, grade in qrels.get(query_id, {}).items() if grade > 0}
        found += len(relevant & {first.doc_ids[i] for i in ids})
        wanted += len(relevant)
    return retrieval_metrics(run, qrels), found / max(wanted, 1)


def latencies(
    static: Any,
    transformer: Any,
    first: EmbeddedSet,
    second: EmbeddedSet,
    candidate_counts: list[int],
    count: int,
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per-query milliseconds of each contender, and how often the real cascade's top 10 equals the
    precomputed one (:func:`cascade_run`'s)."""
    dataset = first.dataset
    texts = [dataset.corpus[i] for i in first.doc_ids]
    static_index = VectorIndex.build(first.documents, texts=texts, kind="flat")
    transformer_index = VectorIndex.build(second.documents, texts=texts, kind="flat")
    step = max(1, len(first.query_ids) // count)
    sample = first.query_ids[::step][:count]
    timings: dict[str, list[float]] = {}
    agreement = {f"cascade@{n}": 0.0 for n in candidate_counts}
    second_docs = unit(np.asarray(second.documents))

    def static_alone(query: str) -> object:
        return static_index.search(static.encode_query([query]), top_k=TOP_K)

    def transformer_alone(query: str) -> object:
        return transformer_index.search(transformer.encode_query([query]), top_k=TOP_K)

    def cascade(n: int) -> Callable[[str], Any]:
        return lambda query: cascade_search(
            static_index, [query], static.encode_query([query]), transformer, top_k=TOP_K, candidates=n
        )

    runners: dict[str, Callable[[str], Any]] = {"static": static_alone, "transformer": transformer_alone}
    runners.update({f"cascade@{n}": cascade(n) for n in candidate_counts})
    for runner in runners.values():  # warm-up
        runner(dataset.queries[sample[0]])
    for repeat, query_id in enumerate(sample):
        query = dataset.queries[query_id]
        for name in alternating_order(list(runners), repeat):
            start = time.perf_counter()
            result = runners[name](query)
            timings.setdefault(name, []).append(1000 * (time.perf_counter() - start))
            if name.startswith("cascade@"):
                n = int(name.split("@")[1])
                static_hits = semantic_search(
                    first.queries[first.query_ids.index(query_id)], first.documents, n
                )
                ids = np.array(sorted(hit.corpus_id for hit in static_hits[0]))
                query_vector = unit(np.asarray(second.queries[first.query_ids.index(query_id)])[None])[0]
                expected = ids[np.argsort(-(second_docs[ids] @ query_vector), kind="stable")[:TOP_K]]
                agreement[name] += [hit.corpus_id for hit in result[0]] == expected.tolist()
    summary = {
        name: {"median_ms": statistics.median(ms), "mean_ms": statistics.fmean(ms), "queries": len(ms)}
        for name, ms in timings.items()
    }
    return summary, {name: hits / len(sample) for name, hits in agreement.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", required=True, help="static model directory (sbert distill static)")
    parser.add_argument("--rescorer", default=None, help="the transformer (default: the bundled model)")
    parser.add_argument("--sets", nargs="+", default=["stsb-proxy", "snli-proxy"])
    parser.add_argument("--candidates", nargs="+", type=int, default=[20, 100])
    parser.add_argument("--latency-queries", type=int, default=100, help="queries timed one at a time")
    parser.add_argument("--precision", default="auto", help="the transformer's precision (default auto)")
    parser.add_argument("--backend", default="auto", help="the transformer's backend (default auto)")
    parser.add_argument("--data-dir", default=None, help="data directory (default: $SBERT_DATA)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--output", default="benchmarks/results/cascade.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    static = SentenceEncoder.from_pretrained(args.static)
    transformer = SentenceEncoder.from_pretrained(
        args.rescorer, device="cpu", precision=args.precision, backend=args.backend
    )
    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(),
        "threads": args.threads,
        "load_average": os.getloadavg()[0],
        "static": args.static,
        "rescorer": args.rescorer or "bundled all-MiniLM-L6-v2",
        "precision": f"{args.precision} -> {transformer.precision}",
        "backend": f"{args.backend} -> {transformer.backend}",
        "top_k": TOP_K,
        "sets": {},
    }
    for name in args.sets:
        dataset = proxy_set(name, args.data_dir)
        quiet = {"show_progress_bar": False}
        first, second = embed_set(static, dataset, **quiet), embed_set(transformer, dataset, **quiet)
        quality: dict[str, Any] = {
            "static": search_and_score(first).metrics,
            "transformer": search_and_score(second).metrics,
        }
        for n in args.candidates:
            metrics, candidate_recall = cascade_run(first, second, n)
            quality[f"cascade@{n}"] = {**metrics, "candidate_recall": candidate_recall}
        timing, agreement = latencies(
            static, transformer, first, second, args.candidates, args.latency_queries
        )
        result["sets"][name] = {
            "queries": len(first.query_ids),
            "documents": len(first.doc_ids),
            # Embedding the whole set (corpus and queries) once: the index build each first stage needs.
            "encode_seconds": {"static": first.encode_seconds, "transformer": second.encode_seconds},
            "quality": {
                k: {m: v[m] for m in (*REPORTED, "candidate_recall") if m in v} for k, v in quality.items()
            },
            "latency": timing,
            "top10_agreement_with_real_cascade": agreement,
        }
        print(f"{name}: {len(first.query_ids)} queries, {len(first.doc_ids)} documents")
        for contender, metrics in quality.items():
            extra = (
                f"  candidate recall {metrics['candidate_recall']:.4f}"
                if "candidate_recall" in metrics
                else ""
            )
            print(
                f"  {contender:<14} NDCG@10 {metrics['ndcg@10']:.4f}  "
                f"median {timing[contender]['median_ms']:.2f} ms/query{extra}"
            )
        print(
            f"  embedding the set: static {first.encode_seconds:.2f} s, transformer {second.encode_seconds:.2f} s"
        )
        print(f"  real cascade's top 10 = precomputed: {agreement}")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{result['date']}, {result['cpu']}, {args.threads} threads -> {args.output}")


if __name__ == "__main__":
    main()
