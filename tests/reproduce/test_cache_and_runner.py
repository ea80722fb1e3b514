import json
from pathlib import Path

from experiments.cache import CellCache
from experiments.runner import Cell, run_cells

from sbert.data import MissingDataError


def _counting(calls: list[str]):  # type: ignore[no-untyped-def]
    def run(x: int) -> dict[str, int]:
        calls.append(f"x={x}")
        return {"y": 2 * x}

    return run


def test_second_run_uses_cache(tmp_path: Path) -> None:
    calls: list[str] = []
    cells = [Cell("t/a", _counting(calls), {"x": 1}), Cell("t/b", _counting(calls), {"x": 2})]
    first = run_cells(cells, CellCache(tmp_path, fingerprint="code1"), log=lambda _: None)
    second = run_cells(cells, CellCache(tmp_path, fingerprint="code1"), log=lambda _: None)
    assert calls == ["x=1", "x=2"]
    assert [o.status for o in first] == ["ran", "ran"] and [o.status for o in second] == ["cached", "cached"]
    assert second[1].result == {"y": 4}


def test_other_code_or_settings_invalidate(tmp_path: Path) -> None:
    calls: list[str] = []
    run_cells([Cell("t/a", _counting(calls), {"x": 1})], CellCache(tmp_path, "code1"), log=lambda _: None)
    run_cells([Cell("t/a", _counting(calls), {"x": 1})], CellCache(tmp_path, "code2"), log=lambda _: None)
    run_cells([Cell("t/a", _counting(calls), {"x": 3})], CellCache(tmp_path, "code2"), log=lambda _: None)
    assert calls == ["x=1", "x=1", "x=3"]
    record = json.loads((tmp_path / "t__a.json").read_text())
    assert record["made_by"]["code"] == "code2" and record["params"] == {"x": 3}


def test_corrupt_cache_file_is_ignored(tmp_path: Path) -> None:
    calls: list[str] = []
    cache = CellCache(tmp_path, "code1")
    run_cells([Cell("t/a", _counting(calls), {"x": 1})], cache, log=lambda _: None)
    (tmp_path / "t__a.json").write_text('{"key": "trunc')
    assert run_cells([Cell("t/a", _counting(calls), {"x": 1})], cache, log=lambda _: None)[0].status == "ran"


def test_missing_data_skips_and_errors_fail_one_cell(tmp_path: Path) -> None:
    def missing() -> dict[str, int]:
        raise MissingDataError("SICK: data/sick/SICK_test_annotated.txt not found")

    def broken() -> dict[str, int]:
        raise RuntimeError("boom")

    outcomes = run_cells(
        [Cell("t/missing", missing), Cell("t/broken", broken), Cell("t/ok", lambda: {"v": 1})],
        CellCache(tmp_path, "c"),
        log=lambda _: None,
    )
    assert [o.status for o in outcomes] == ["skipped", "failed", "ran"]
    assert "SICK" in outcomes[0].reason and "boom" in outcomes[1].reason
    assert not (tmp_path / "t__missing.json").exists()


def test_progress_names_cell_and_time_left(tmp_path: Path) -> None:
    lines: list[str] = []
    cells = [Cell("t/a", lambda: {}, estimate_s=120), Cell("t/b", lambda: {}, estimate_s=60)]
    run_cells(cells, CellCache(tmp_path, "c"), log=lines.append)
    assert lines == ["[1/2] t/a  (about 3 min left)", "[2/2] t/b  (about 1 min left)"]
