"""Retrieval metrics against trec_eval (pytrec_eval) on saved runs, and the evaluator against
sentence-transformers' InformationRetrievalEvaluator on a tiny model with prompts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sbert import SentenceEncoder
from sbert.data.beir import RetrievalSet, read_beir
from sbert.evaluation.retrieval import evaluate_retrieval, retrieval_metrics, write_run

TREC_MEASURES = {"ndcg_cut_10": "ndcg@10", "map_cut_100": "map@100", "recall_1": "recall@1"}
TREC_MEASURES |= {"recall_10": "recall@10", "recall_100": "recall@100"}


def random_run(seed: int) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """Queries with graded judgements, runs of 0-150 documents with tied scores, and judged
    documents the run never found."""
    rng = random.Random(seed)
    run, qrels = {}, {}
    for q in range(40):
        docs = [f"d{i}" for i in rng.sample(range(400), rng.randint(0, 150))]
        run[f"q{q}"] = {doc: float(rng.randint(0, 20)) / 4 for doc in docs}  # few values: many ties
        judged = [*rng.sample(docs, min(len(docs), rng.randint(0, 6))), f"x{q}"]  # x: never retrieved
        qrels[f"q{q}"] = {doc: rng.choice([1, 1, 2, 3]) for doc in judged}
    return run, qrels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metrics_equal_trec_eval_on_a_saved_run_file(seed: int, tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run, qrels = random_run(seed)
    write_run(run, tmp_path / "run.txt")
    with (tmp_path / "run.txt").open() as handle:
        saved = pytrec_eval.parse_run(handle)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES) | {"recip_rank"})
    theirs = evaluator.evaluate(saved)
    top10 = {
        q: dict(sorted(docs.items(), key=lambda d: (d[1], d[0]), reverse=True)[:10])
        for q, docs in saved.items()
    }
    mrr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    judged = [q for q in qrels if q in theirs]  # trec_eval scores the queries the run holds
    assert len(judged) >= 35
    ours = retrieval_metrics(saved, {q: qrels[q] for q in judged})
    for measure, name in TREC_MEASURES.items():
        assert ours[name] == pytest.approx(sum(theirs[q][measure] for q in judged) / len(judged), abs=1e-6)
    assert ours["mrr@10"] == pytest.approx(sum(mrr[q]["recip_rank"] for q in judged) / len(judged), abs=1e-6)


def test_a_judged_query_the_run_missed_scores_zero() -> None:
    metrics = retrieval_metrics({"q1": {"a": 1.0}}, {"q1": {"a": 1}, "q2": {"b": 1}})
    assert metrics["ndcg@10"] == 0.5 and metrics["recall@1"] == 0.5


SET = RetrievalSet(
    "tiny",
    corpus={
        f"d{i}": text
        for i, text in enumerate(
            [
                "a man plays the guitar",
                "the dog runs in the park",
                "a child is eating food",
                "rain in the street",
                "the cat sleeps in the sun",
                "a red car",
                "a woman cooks food",
                "the piano music is happy",
                "a big blue rocket in space",
                "code and test",
            ]
        )
    },
    queries={"q0": "a man is playing music", "q1": "a dog running", "q2": "food", "q3": "the weather"},
    qrels={"q0": {"d0": 1, "d7": 1}, "q1": {"d1": 1}, "q2": {"d2": 1, "d6": 1}, "q3": {"d3": 1}},
)


def test_the_evaluator_equals_sentence_transformers_with_prompts(prompted_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    model = SentenceEncoder.from_pretrained(prompted_dir, device="cpu", precision="float32", backend="torch")
    ours = evaluate_retrieval(model, SET).metrics
    oracle = InformationRetrievalEvaluator(
        SET.queries,
        SET.corpus,
        {q: set(docs) for q, docs in SET.qrels.items()},
        query_prompt_name="query",
        corpus_prompt_name="document",
        write_csv=False,
        name="tiny",
    )
    theirs = oracle(SentenceTransformer(str(prompted_dir), device="cpu"))
    for name in ("ndcg@10", "mrr@10", "map@100", "recall@1", "recall@10"):
        assert ours[name] == pytest.approx(theirs[f"tiny_cosine_{name}"], abs=1e-6), name


def test_the_training_evaluator_scores_as_evaluate_retrieval(tiny_encoder: SentenceEncoder) -> None:
    from sbert.evaluation.retrieval import RetrievalEvaluator

    evaluator = RetrievalEvaluator(SET)
    assert evaluator(tiny_encoder) == pytest.approx(evaluate_retrieval(tiny_encoder, SET).metrics, abs=1e-9)
    assert evaluator.primary_metric in evaluator(tiny_encoder)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "binary"])
def test_an_index_kind_is_scored_like_exact_search(tiny_encoder: SentenceEncoder, kind: str) -> None:
    exact = evaluate_retrieval(tiny_encoder, SET)
    indexed = evaluate_retrieval(tiny_encoder, SET, index_kind=kind)
    assert indexed.search == kind and exact.search == "exact"
    if kind != "binary":  # binary codes re-rank from int8: scores move, not the ranking of so few
        assert indexed.metrics == pytest.approx(exact.metrics, abs=1e-6)
    assert set(indexed.metrics) == set(exact.metrics)


def write_set(folder: Path, corpus: str, queries: str, qrels: str) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    (folder / "queries.jsonl").write_text(queries, encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, encoding="utf-8")
    return folder


GOOD_CORPUS = '{"_id": "d1", "title": "T", "text": "one"}\n{"_id": "d2", "text": "two"}\n'
GOOD_QUERIES = '{"_id": "q1", "text": "first"}\n{"_id": "q2", "text": "second"}\n'


def test_a_beir_folder_round_trips(tmp_path: Path) -> None:
    read = read_beir(write_set(tmp_path / "s", GOOD_CORPUS, GOOD_QUERIES, "q1\td1\t1\nq2\td2\t0\n"))
    assert read.corpus == {"d1": "T one", "d2": "two"}
    assert read.queries == {"q1": "first"} and read.qrels == {"q1": {"d1": 1}}  # grade 0 judges nothing
    SET.save(tmp_path / "saved")
    again = read_beir(tmp_path / "saved")
    assert (again.corpus, again.queries, again.qrels) == (SET.corpus, SET.queries, SET.qrels)


@pytest.mark.parametrize(
    ("corpus", "queries", "qrels", "message"),
    [
        (GOOD_CORPUS, GOOD_QUERIES, "q9\td1\t1\n", r"test.tsv:2: query-id 'q9' is not in queries.jsonl"),
        (GOOD_CORPUS, GOOD_QUERIES, "q1\td9\t1\n", r"test.tsv:2: corpus-id 'd9' is not in corpus.jsonl"),
        (
            GOOD_CORPUS,
            GOOD_QUERIES,
            "q1\td1\t1\nq1\td1\t2\n",
            r"test.tsv:3: the pair 'q1', 'd1' is judged again",
        ),
        (
            GOOD_CORPUS + '{"_id": "d1", "text": "x"}\n',
            GOOD_QUERIES,
            "",
            r"corpus.jsonl:3: _id 'd1' appears again",
        ),
        (GOOD_CORPUS, GOOD_QUERIES + "{not json\n", "", r"queries.jsonl:3: not JSON"),
        (GOOD_CORPUS, '{"_id": "q1", "text": "  "}\n', "", r"queries.jsonl:1: _id 'q1' has an empty text"),
        (GOOD_CORPUS, GOOD_QUERIES, "q1 d1 1\n", r"test.tsv:2: expected query-id, corpus-id and an integer"),
    ],
)
def test_bad_beir_lines_name_the_file_and_line(
    tmp_path: Path, corpus: str, queries: str, qrels: str, message: str
) -> None:
    from sbert.data.errors import DataFormatError

    with pytest.raises(DataFormatError, match=message):
        read_beir(write_set(tmp_path / "s", corpus, queries, qrels))


def test_bad_lines_can_be_skipped_and_counted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = write_set(tmp_path / "s", GOOD_CORPUS, GOOD_QUERIES, "q1\td1\t1\nq9\td1\t1\n")
    assert read_beir(folder, skip_bad_lines=True).qrels == {"q1": {"d1": 1}}
    assert "skipped 1 malformed line(s)" in caplog.text


def test_proxy_sets_never_let_a_query_find_itself(data_dir: Path) -> None:
    from sbert.data.beir import proxy_set

    for name in ("stsb-proxy", "snli-proxy"):
        proxy = proxy_set(name, data_dir)
        texts = set(proxy.corpus.values())
        assert proxy.queries and all(docs for docs in proxy.qrels.values())
        assert all(doc in proxy.corpus for docs in proxy.qrels.values() for doc in docs)
        if name == "stsb-proxy":
            assert not texts & set(proxy.queries.values())


def test_the_command_prints_each_search_and_writes_a_run(
    tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    from sbert.cli import main

    SET.save(tmp_path / "set")
    common = ["--model", str(tiny_model_dir), "--backend", "torch", "--run", str(tmp_path / "run.txt")]
    out_file = tmp_path / "report.json"
    assert (
        main(
            [
                "evaluate",
                "retrieval",
                str(tmp_path / "set"),
                "--index-kind",
                "exact",
                "flat",
                "-o",
                str(out_file),
                *common,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "set: 4 queries, 10 documents" in out
    assert "| exact | " in out and "| flat | " in out
    import json

    report = json.loads(out_file.read_text())
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", backend="torch", precision="float32"
    )
    expected = evaluate_retrieval(model, read_beir(tmp_path / "set")).metrics
    assert report["results"][0]["metrics"] == pytest.approx(expected, abs=1e-6)
    assert len((tmp_path / "run.txt").read_text().splitlines()) == 4 * 10  # every document of each query


def test_the_command_names_a_missing_dataset(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    from sbert.cli import main

    assert main(["evaluate", "retrieval", str(tmp_path / "nothing"), "--model", str(tiny_model_dir)]) != 0
    assert "corpus.jsonl: missing" in capsys.readouterr().err


def test_a_prefix_of_the_dimensions_is_searched_as_asked(tiny_encoder: SentenceEncoder) -> None:
    from sbert.embeddings.search import semantic_search
    from sbert.evaluation.retrieval import embed_set, search_and_score

    embedded = embed_set(tiny_encoder, SET)
    half = search_and_score(embedded, dimensions=16)
    assert half.dimensions == 16 and half.memory_bytes == 10 * 16 * 4
    hits = semantic_search(embedded.queries[:, :16], embedded.documents[:, :16], top_k=3)  # by hand
    by_hand = {
        q: {embedded.doc_ids[h.corpus_id]: h.score for h in found}
        for q, found in zip(embedded.query_ids, hits)
    }
    assert {q: list(docs)[:3] for q, docs in half.run.items()} == {
        q: list(docs) for q, docs in by_hand.items()
    }
    with pytest.raises(ValueError, match="between 1 and the vectors' 32, got 64"):
        search_and_score(embedded, dimensions=64)
