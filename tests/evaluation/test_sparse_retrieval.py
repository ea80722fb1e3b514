"""Sparse retrieval evaluation: metrics against trec_eval (pytrec_eval) on sparse runs, exact search
against a dense brute force, and the active dimensions against sentence-transformers'
SparseInformationRetrievalEvaluator on a tiny random SPLADE model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse
from tests.losses.test_sparse_losses import build_tiny_mlm

from sbert.data.beir import RetrievalSet
from sbert.evaluation.retrieval import retrieval_metrics
from sbert.evaluation.sparse_retrieval import (
    SparseRetrievalEvaluator,
    evaluate_sparse_retrieval,
    score_runs,
    sparse_run,
    sparsity_stats,
)

TREC_MEASURES = {"ndcg_cut_10": "ndcg@10", "map_cut_100": "map@100", "recall_1": "recall@1"}
TREC_MEASURES |= {"recall_10": "recall@10", "recall_100": "recall@100"}


def random_sparse(rows: int, dim: int, density: float, seed: int) -> scipy.sparse.csr_matrix:
    matrix = scipy.sparse.random(
        rows, dim, density=density, format="csr", random_state=seed, dtype=np.float32
    )
    matrix.data = np.round(matrix.data * 4) / 4 + 0.25  # few distinct weights: tied scores
    return matrix


def test_sparse_run_is_the_exact_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sbert.evaluation.sparse_retrieval.BLOCK_SCORES", 700)  # several query blocks
    queries, documents = random_sparse(30, 300, 0.05, 0), random_sparse(200, 300, 0.05, 1)
    ids_q, ids_d = [f"q{i}" for i in range(30)], [f"d{i}" for i in range(200)]
    run = sparse_run(queries, documents, ids_q, ids_d, top_k=15)
    dense = queries.toarray() @ documents.toarray().T  # (30, 200)
    for i, query in enumerate(ids_q):
        positive = np.sort(dense[i][dense[i] > 0])[::-1][:15]
        assert sorted(run[query].values(), reverse=True) == pytest.approx(positive.tolist(), rel=1e-6)
        assert all(dense[i, int(d[1:])] == pytest.approx(s, rel=1e-6) for d, s in run[query].items())


@pytest.mark.parametrize("seed", [0, 1])
def test_metrics_of_a_sparse_run_equal_trec_eval(seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(seed)
    queries, documents = random_sparse(40, 500, 0.03, seed), random_sparse(400, 500, 0.03, seed + 10)
    ids_q, ids_d = [f"q{i}" for i in range(40)], [f"d{i}" for i in range(400)]
    run = sparse_run(queries, documents, ids_q, ids_d, top_k=100)
    qrels: dict[str, dict[str, int]] = {}
    for query in ids_q:
        found = list(run[query])
        judged = (
            [found[i] for i in rng.choice(len(found), min(len(found), 4), replace=False)] if found else []
        )
        qrels[query] = {doc: int(rng.integers(1, 4)) for doc in [*judged, f"d{rng.integers(400)}"]}
    judged_queries = [q for q in ids_q if run[q]]  # trec_eval scores the queries the run holds
    assert len(judged_queries) >= 30
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES)).evaluate(run)
    top10 = {
        q: dict(sorted(d.items(), key=lambda x: (x[1], x[0]), reverse=True)[:10]) for q, d in run.items()
    }
    mrr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    ours = score_runs({"sparse": run}, {q: qrels[q] for q in judged_queries})["sparse"]
    for measure, name in TREC_MEASURES.items():
        expected = sum(theirs[q][measure] for q in judged_queries) / len(judged_queries)
        assert ours[name] == pytest.approx(expected, abs=1e-6), name
    expected_mrr = sum(mrr[q]["recip_rank"] for q in judged_queries) / len(judged_queries)
    assert ours["mrr@10"] == pytest.approx(expected_mrr, abs=1e-6)


def test_a_hybrid_run_is_scored_as_any_run() -> None:
    qrels = {"q": {"a": 1}}
    runs = {"dense": {"q": {"b": 2.0, "a": 1.0}}, "sparse": {"q": {"a": 5.0}}, "hybrid": {"q": {"a": 0.1}}}
    scored = score_runs(runs, qrels)
    assert scored["dense"] == retrieval_metrics(runs["dense"], qrels)
    assert scored["hybrid"]["ndcg@10"] == 1.0 and scored["dense"]["mrr@10"] == 0.5


def test_sparsity_stats_by_hand_and_errors() -> None:
    stats = sparsity_stats(np.array([[1.0, 0, 0, 0], [1.0, 1.0, 0, 0]]), np.array([[0.0, 0, 3.0, 0]]))
    assert stats == pytest.approx(
        {
            "query_active_dims": 1.5,
            "query_sparsity_ratio": 1 - 1.5 / 4,
            "corpus_active_dims": 1.0,
            "corpus_sparsity_ratio": 0.75,
            "avg_flops": 0.0,
        }
    )
    with pytest.raises(ValueError, match="no query vectors"):
        sparsity_stats(np.zeros((0, 4)), np.ones((1, 4)))
    with pytest.raises(ValueError, match="3 query vectors for 2 ids"):
        sparse_run(np.ones((3, 4)), np.ones((1, 4)), ["a", "b"], ["d"])


CORPUS = {
    "d0": "rain falls from dark clouds.",
    "d1": "a man plays a guitar on stage.",
    "d2": "the team won the final game.",
    "d3": "a dog barks at the cat.",
    "d4": "the weather today is sunny and dry.",
    "d5": "someone makes music with a piano.",
}
QUERIES = {"q0": "what causes rain?", "q1": "who plays music?", "q2": "who won the game?"}
QRELS = {"q0": {"d0": 1, "d4": 1}, "q1": {"d1": 1, "d5": 1}, "q2": {"d2": 1}}  # binary, as ST reads them
TINY = RetrievalSet("tiny", CORPUS, QUERIES, QRELS)


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_mlm(tmp_path_factory.mktemp("mlm"))


@pytest.fixture(scope="module")
def st_sparse_model(mlm_dir: Path) -> Any:
    from sentence_transformers.sparse_encoder import SparseEncoder as STSparseEncoder

    return STSparseEncoder(str(mlm_dir), device="cpu")


@pytest.fixture(scope="module")
def sparse_model(mlm_dir: Path) -> Any:
    from sbert import SparseEncoder

    return SparseEncoder.from_pretrained(mlm_dir, device="cpu")


def st_evaluator_metrics(model: Any, max_active_dims: int | None) -> dict[str, float]:
    from sentence_transformers.sparse_encoder.evaluation import SparseInformationRetrievalEvaluator

    evaluator = SparseInformationRetrievalEvaluator(
        QUERIES,
        CORPUS,
        {q: set(d) for q, d in QRELS.items()},
        name="tiny",
        max_active_dims=max_active_dims,
        show_progress_bar=False,
        write_csv=False,
    )
    return {key.removeprefix("tiny_"): value for key, value in evaluator(model).items()}


@pytest.mark.parametrize("max_active_dims", [None, 16])
def test_active_dims_equal_sentence_transformers_evaluator(
    sparse_model: Any, st_sparse_model: Any, max_active_dims: int | None
) -> None:
    """sbert's SparseEncoder through our evaluator, sentence-transformers' through its own."""
    theirs = st_evaluator_metrics(st_sparse_model, max_active_dims)
    ours = evaluate_sparse_retrieval(sparse_model, TINY, max_active_dims=max_active_dims).metrics
    for key in ("query_active_dims", "corpus_active_dims", "query_sparsity_ratio", "corpus_sparsity_ratio"):
        assert ours[key] == pytest.approx(theirs[key], rel=1e-6), key
    assert ours["avg_flops"] == pytest.approx(theirs["avg_flops"], rel=1e-5)
    assert ours["ndcg@10"] == pytest.approx(theirs["dot_ndcg@10"], abs=1e-6)
    assert ours["mrr@10"] == pytest.approx(theirs["dot_mrr@10"], abs=1e-6)
    if max_active_dims is not None:
        assert ours["query_active_dims"] <= max_active_dims


def test_the_training_evaluator_reports_the_same_metrics(sparse_model: Any) -> None:
    evaluator = SparseRetrievalEvaluator(TINY)
    assert evaluator(sparse_model) == evaluate_sparse_retrieval(sparse_model, TINY).metrics
    with pytest.raises(ValueError, match="no judged query"):
        SparseRetrievalEvaluator(RetrievalSet("empty", CORPUS, QUERIES, {}))


def test_result_keeps_the_vectors_and_leaves_them_out_of_its_dict(sparse_model: Any) -> None:
    result = evaluate_sparse_retrieval(sparse_model, TINY, top_k=3)
    assert result.query_vectors is not None and result.query_vectors.shape[0] == 3
    assert set(result.to_dict()) == {"dataset", "metrics", "queries", "documents", "seconds"}
    assert all(len(docs) <= 3 for docs in result.run.values())


def test_the_command_evaluates_a_sparse_model(
    mlm_dir: Path, sparse_model: Any, tmp_path: Path, capsys
) -> None:
    """A plain MLM folder with --sparse; a folder saved as a SparseEncoder is told on its own."""
    import json

    from sbert.cli import main

    TINY.save(tmp_path / "set")
    sparse_model.save(tmp_path / "saved")
    expected = evaluate_sparse_retrieval(sparse_model, TINY).metrics
    for model, flags in ((mlm_dir, ["--sparse"]), (tmp_path / "saved", [])):
        report = tmp_path / "report.json"
        argv = ["evaluate", "retrieval", str(tmp_path / "set"), "--model", str(model), "--device", "cpu"]
        assert main([*argv, *flags, "-o", str(report), "--run", str(tmp_path / "run.txt")]) == 0
        out = capsys.readouterr().out
        assert "set: 3 queries, 6 documents, sparse model" in out and "query_active_dims" in out
        assert json.loads(report.read_text())["results"][0]["metrics"] == pytest.approx(expected)
    assert main([*argv, "--index-kind", "hnsw"]) != 0
    assert "--index-kind does not apply to a sparse model" in capsys.readouterr().err
