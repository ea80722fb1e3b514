"""``sbert reproduce --report-only``: the report is a function of ``results.json`` alone."""

import json
import shutil
from pathlib import Path

import pytest
from experiments.pipeline import REPORT_FILE, RESULTS_FILE
from experiments.report import render_markdown

from sbert.cli import main
from sbert.cli.reproduce import find_checkout

COMMITTED = Path(__file__).resolve().parents[2] / "reports" / "full"


def test_report_only_reproduces_the_committed_report(tmp_path: Path) -> None:
    shutil.copy(COMMITTED / RESULTS_FILE, tmp_path / RESULTS_FILE)
    assert main(["reproduce", "--report-only", "--output", str(tmp_path)]) == 0
    assert (tmp_path / REPORT_FILE).read_text(encoding="utf-8") == (COMMITTED / REPORT_FILE).read_text(
        encoding="utf-8"
    )


def test_report_only_leaves_an_unchanged_report_alone(tmp_path: Path) -> None:
    shutil.copy(COMMITTED / RESULTS_FILE, tmp_path / RESULTS_FILE)
    assert main(["reproduce", "--report-only", "--output", str(tmp_path)]) == 0
    before = (tmp_path / REPORT_FILE).stat()
    assert main(["reproduce", "--report-only", "--output", str(tmp_path)]) == 0
    after = (tmp_path / REPORT_FILE).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_the_run_describes_itself_and_counts_epochs_in_words() -> None:
    results = json.loads((COMMITTED / RESULTS_FILE).read_text(encoding="utf-8"))
    results["setting_differences"] = "- what this run did differently\n"
    results["scale"] = {**results["scale"], "stsb_epochs": 1, "ablation_stsb_epochs": 2}
    report = render_markdown(results)
    assert "## Where our setting differs from the paper's\n\n- what this run did differently\n" in report
    assert "all train pairs × 1 epoch;" in report and "all STSb pairs × 2 epochs per" in report
    assert "Protocol: `fast`" in report  # Table 5 made before the senteval protocol existed
    results["cells"]["table5/bundled"]["result"]["protocol"] = "senteval"
    assert "Protocol: `fast` (scikit-learn" in render_markdown(results)  # the other rows still are fast
    for cell in ("table5/glove", "table5/nli", "table5/stsb"):
        results["cells"][cell]["result"]["protocol"] = "senteval"
    assert "Protocol: `senteval`, SentEval's default protocol" in render_markdown(results)


def test_outside_a_checkout_the_command_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SBERT_EXPERIMENTS", str(tmp_path))  # a folder without experiments/
    assert main(["reproduce", "--report-only", "--output", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert "from a checkout of the sbert repository" in error and "SBERT_EXPERIMENTS=" in error
    assert not (tmp_path / REPORT_FILE).exists()


def test_the_checkout_is_found_from_a_folder_inside_it_or_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = COMMITTED.parents[1]
    monkeypatch.delenv("SBERT_EXPERIMENTS", raising=False)
    monkeypatch.chdir(checkout / "docs")
    assert find_checkout() == checkout
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SBERT_EXPERIMENTS", str(checkout))
    assert find_checkout() == checkout
