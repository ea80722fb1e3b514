"""A miniature of every cell of ``sbert reproduce`` (tiny random BERT, a few pairs), so the pipeline cannot rot."""

import json
import os
from pathlib import Path

import pytest
from experiments.pipeline import REPORT_FILE, RESULTS_FILE, reproduce
from experiments.scale import Scale

from sbert.cli import main

TINY = Scale(
    name="tiny",
    seeds=(1, 2),
    nli_pairs=32,
    stsb_pairs=32,
    stsb_epochs=1,
    ablation_nli_pairs=24,
    ablation_stsb_pairs=32,
    ablation_stsb_epochs=1,
    sts_sets=("STSb",),
    transfer_tasks=("MRPC",),
    speed_sentences=32,
    speed_repeats=1,
    mining_sentences=64,
    cross_pairs=16,
)


# STSb dev and test pairs the miniature scores on: each of its 18 trainings scores the dev and test
# sets, which with the whole sets (1,500 and 1,379 pairs) took most of its 200 s of CPU.
EVAL_PAIRS = 200


@pytest.fixture(scope="module")
def mini_data(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """The data folder with STSb dev and test cut to their first ``EVAL_PAIRS`` pairs (the rest linked)."""
    folder = tmp_path_factory.mktemp("mini-data")
    for child in data_dir.iterdir():
        if child.name != "stsb":
            (folder / child.name).symlink_to(child)
    stsb = folder / "stsb" / "original"
    stsb.mkdir(parents=True)
    (folder / "stsb" / "senteval_tokenized").symlink_to(data_dir / "stsb" / "senteval_tokenized")
    for name in ("sts-dev.csv", "sts-test.csv"):
        lines = (data_dir / "stsb" / "original" / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (stsb / name).write_text("".join(lines[:EVAL_PAIRS]), encoding="utf-8")
    (stsb / "sts-train.csv").symlink_to(data_dir / "stsb" / "original" / "sts-train.csv")
    return folder


@pytest.fixture(scope="module")
def miniature(tmp_path_factory: pytest.TempPathFactory, trainable_model_dir: Path, mini_data: Path) -> Path:
    output = tmp_path_factory.mktemp("report")
    reproduce(output, TINY, str(mini_data), "test", base=str(trainable_model_dir), log=lambda _: None)
    return output


def test_every_cell_runs_and_the_report_has_every_table(miniature: Path) -> None:
    results = json.loads((miniature / RESULTS_FILE).read_text())
    assert {c["status"] for c in results["cells"].values()} == {"ran"}, results["cells"]
    assert len(results["cells"]) == 5 + 2 + 3 * 2 + (3 + 6 + 3) + 4
    report = (miniature / REPORT_FILE).read_text()
    for heading in ("Table 1", "Table 2", "Table 5", "Table 6", "Table 7", "findings, checked"):
        assert heading in report
    assert "| paper |" in report and "| ours |" in report
    assert "not measured" not in report  # every finding got a verdict from measured figures
    assert "extrapolated" in report and "measured" in report
    assert "static 32-d distilled from it (no corpus)" in report  # the tiny BERT is 32-d: all of it
    assert sorted(p.name for p in miniature.glob("*.png")) == [
        "table1_sts.png",
        "table2_stsb_seeds.png",
        "table5_senteval.png",
        "table6_ablation.png",
        "table7_speed.png",
    ]
    assert results["versions"]["sbert"] and results["machine"]["torch_threads"] >= 1


def test_trained_models_are_shared_between_cells(miniature: Path) -> None:
    results = json.loads((miniature / RESULTS_FILE).read_text())["cells"]
    # Table 6's mean-pooling / (u, v, |u−v|) run is one model; Table 5 evaluates Table 1's NLI model.
    assert "table6/concat-u_v_absdiff" not in results
    assert "--concatenation" not in results["table6/nli-mean"]["result"]["command"]
    assert results["table5/nli"]["result"]["command"] == results["table1/nli"]["result"]["command"]
    assert (
        results["table6/stsb-mean"]["result"]["command"] == results["table2/stsb-seed1"]["result"]["command"]
    )
    assert "--pooling cls" in results["table6/stsb-cls"]["result"]["command"]
    models = list((miniature / ".work" / "models").iterdir())
    # NLI: Table 1's, and Table 6's 3 poolings + 6 more modes; STSb: 2 seeds + 2 more poolings;
    # NLI → STSb: 2 seeds; cross-encoder: 2 seeds.
    assert len(models) == (1 + 3 + 6) + (2 + 2) + 2 + 2


def test_a_second_run_only_reads_the_cache(
    miniature: Path, trainable_model_dir: Path, mini_data: Path
) -> None:
    lines: list[str] = []
    results = reproduce(
        miniature, TINY, str(mini_data), "test", base=str(trainable_model_dir), log=lines.append
    )
    assert {c["status"] for c in results["cells"].values()} == {"cached"}
    assert lines == [f"report: {miniature / REPORT_FILE}"]


def test_report_renders_from_results_json_alone(miniature: Path, tmp_path: Path) -> None:
    (tmp_path / RESULTS_FILE).write_text((miniature / RESULTS_FILE).read_text())
    assert main(["reproduce", "--report-only", "--output", str(tmp_path)]) == 0
    assert (tmp_path / REPORT_FILE).read_text() == (miniature / REPORT_FILE).read_text()
    assert len(list(tmp_path.glob("*.png"))) == 5


def test_missing_data_skips_cells_with_a_line_in_the_report(
    tmp_path: Path, trainable_model_dir: Path, data_dir: Path
) -> None:
    partial_data = tmp_path / "data"
    partial_data.mkdir()
    (partial_data / "stsb").symlink_to(data_dir / "stsb")  # no SICK, no SNLI
    scale = Scale(**{**TINY.as_dict(), "sts_sets": ("STSb", "SICK-R"), "seeds": (1,)})
    output = tmp_path / "report"
    reproduce(
        output,
        scale,
        str(partial_data),
        "test",
        base=str(trainable_model_dir),
        only=["table1/bundled-mean", "table1/nli"],
    )
    cells = json.loads((output / RESULTS_FILE).read_text())["cells"]
    assert cells["table1/bundled-mean"]["status"] == "ran"
    assert set(cells["table1/bundled-mean"]["result"]["missing"]) == {"SICK-R"}
    assert cells["table1/nli"]["status"] == "skipped" and "SNLI" in cells["table1/nli"]["reason"]
    report = (output / REPORT_FILE).read_text()
    assert "`table1/nli`: skipped: SNLI" in report and "SICK-R skipped" in report


def test_cli_runs_selected_cells_and_names_a_bad_prefix(
    tmp_path: Path, trainable_model_dir: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["reproduce", "--quick", "--base", str(trainable_model_dir), "--data-dir", str(data_dir)]
    assert main([*common, "--output", str(tmp_path), "--only", "table9"]) == 1
    assert "no cell id starts with table9" in capsys.readouterr().err
    assert main([*common, "--output", str(tmp_path), "--only", "table1/bundled-cls"]) == 0
    results = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert list(results["cells"]) == ["table1/bundled-cls"]
    assert results["command"].startswith("sbert reproduce --quick --output")


def test_a_stopped_run_leaves_a_report_of_the_finished_cells(
    tmp_path: Path, trainable_model_dir: Path, data_dir: Path
) -> None:
    def stop_at_second_cell(line: str) -> None:
        if line.startswith("[2/"):
            raise KeyboardInterrupt

    only = ["table1/glove", "table1/bundled-mean"]
    with pytest.raises(KeyboardInterrupt):
        reproduce(
            tmp_path,
            TINY,
            str(data_dir),
            "test",
            str(trainable_model_dir),
            only=only,
            log=stop_at_second_cell,
        )
    cells = json.loads((tmp_path / RESULTS_FILE).read_text())["cells"]
    assert {cell_id: cell["status"] for cell_id, cell in cells.items()} == {
        "table1/glove": "ran",
        "table1/bundled-mean": "pending",
    }
    assert "`table1/bundled-mean`: not run yet" in (tmp_path / REPORT_FILE).read_text()


@pytest.mark.parametrize("as_link", [False, True], ids=["folder", "symbolic-link"])
def test_a_relative_data_folder_is_made_absolute_once(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, as_link: bool
) -> None:
    """``SBERT_DATA=../shared/data`` as the README writes it, from a checkout beside ``shared/``: made
    absolute against the working directory once, and a data folder that is a symbolic link is kept as
    the user named it (reports show the user's path), not swapped for the link's target (issue 54)."""
    from sbert.cli.common import absolute_path
    from sbert.data.paths import resolve_data_dir

    (tmp_path / "repo").mkdir()
    (tmp_path / "shared").mkdir()
    if as_link:
        (tmp_path / "shared" / "data").symlink_to(data_dir, target_is_directory=True)
    else:  # a real folder holding the data set the check reads (links inside, the folder itself real)
        (tmp_path / "shared" / "data").mkdir()
        for child in data_dir.iterdir():
            (tmp_path / "shared" / "data" / child.name).symlink_to(child)
    monkeypatch.chdir(tmp_path / "repo")
    # the working directory as the system reports it (tmp_path may itself sit under a link)
    expected = Path.cwd().parent / "shared" / "data"
    monkeypatch.setenv("SBERT_DATA", "../shared/data")
    assert resolve_data_dir() == expected
    assert expected.is_symlink() is as_link
    assert Path(absolute_path("../shared/data")) == expected
    assert resolve_data_dir().resolve() == (data_dir.resolve() if as_link else expected.resolve())
    assert main(["data", "check"]) in (0, 1)  # the entry point rewrites the variable once
    assert os.environ["SBERT_DATA"] == str(expected)
    monkeypatch.chdir(tmp_path)  # later working directories name the same folder
    assert resolve_data_dir() == expected
