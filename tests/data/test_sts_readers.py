import logging
from pathlib import Path

import pytest

from sbert.data import DataFormatError, read_sick, read_sts
from sbert.data.sts import STS_SUBSETS


def write_sts_year(root: Path, name: str, source: str, rows: dict[str, list[tuple[str, str]]]) -> Path:
    """Write an STS year: {subset: [(input line, gold line)]}; other subsets get one scored pair."""
    folder = root / ("sts12-16/original" if source == "original" else "sts12-16") / f"{name}-en-test"
    folder.mkdir(parents=True, exist_ok=True)
    prefix = "STS2016" if (source, name) == ("original", "STS16") else "STS"
    filler = "x y\tx z\tsrc\tsrc" if prefix == "STS2016" else "x y\tx z"
    for subset in STS_SUBSETS[name]:
        lines = rows.get(subset, [(filler, "3.0")])
        (folder / f"{prefix}.input.{subset}.txt").write_text("".join(i + "\n" for i, _ in lines), "utf-8")
        (folder / f"{prefix}.gs.{subset}.txt").write_text("".join(g + "\n" for _, g in lines), "utf-8")
    return folder


def test_sts16_original_layout_four_fields_and_blank_gold(tmp_path: Path) -> None:
    write_sts_year(
        tmp_path,
        "STS16",
        "original",
        {
            "headlines": [
                ("A b.\tA c.\tEurope Media\tEurope Media", "4"),
                ("Unscored.\tPair.\tsrc\tsrc", ""),
                ("D e.\tD f.\tsrc\tsrc", "1.5"),
            ]
        },
    )
    subsets = read_sts("STS16", tmp_path)
    assert list(subsets) == list(STS_SUBSETS["STS16"])
    assert [(p.sentence1, p.sentence2, p.score) for p in subsets["headlines"]] == [
        ("A b.", "A c.", 4.0),
        ("D e.", "D f.", 1.5),
    ]


def test_senteval_form_and_sts13_without_smt(tmp_path: Path) -> None:
    folder = write_sts_year(tmp_path, "STS13", "senteval", {"FNWN": [("a b\ta c", "2.4")]})
    (folder / "STS.gs.SMT.txt").write_text("1.0\n", "utf-8")  # gold without input: never read
    subsets = read_sts("STS13", tmp_path, source="senteval")
    assert list(subsets) == ["FNWN", "headlines", "OnWN"]
    assert subsets["FNWN"][0].score == 2.4


def test_sts_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    write_sts_year(tmp_path, "STS12", "original", {"MSRpar": [("a\tb", "1"), ("only one field", "2")]})
    with pytest.raises(DataFormatError, match=r"STS.input.MSRpar.txt:2: expected 2 tab-separated fields"):
        read_sts("STS12", tmp_path)
    write_sts_year(tmp_path, "STS12", "original", {"MSRpar": [("a\tb", "1"), ("c\td", "5.5")]})
    with pytest.raises(DataFormatError, match=r"STS.gs.MSRpar.txt:2: score 5.5 is outside 0-5"):
        read_sts("STS12", tmp_path)
    write_sts_year(tmp_path, "STS12", "original", {"MSRpar": [("a\t ", "1")]})
    with pytest.raises(DataFormatError, match=r"MSRpar.txt:1: empty sentence"):
        read_sts("STS12", tmp_path)


def test_sts_skip_bad_lines_counts_and_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_sts_year(
        tmp_path, "STS12", "original", {"MSRpar": [("a\tb", "1"), ("bad", "2"), ("c\td", "x"), ("e\tf", "3")]}
    )
    with caplog.at_level(logging.WARNING, logger="sbert"):
        subsets = read_sts("STS12", tmp_path, skip_bad_lines=True)
    assert [p.score for p in subsets["MSRpar"]] == [1.0, 3.0]
    assert "STS.input.MSRpar.txt: skipped 1 malformed line(s) (first: line 2" in caplog.text
    assert "STS.gs.MSRpar.txt: skipped 1 malformed line(s) (first: line 3: score 'x'" in caplog.text


def test_sts_misaligned_files_and_unknown_names(tmp_path: Path) -> None:
    folder = write_sts_year(tmp_path, "STS15", "original", {})
    (folder / "STS.gs.images.txt").write_text("1\n2\n", "utf-8")
    with pytest.raises(DataFormatError, match=r"STS.gs.images.txt:2: 2 gold lines but 1 input lines"):
        read_sts("STS15", tmp_path)
    with pytest.raises(ValueError, match="unknown STS set 'STS17'"):
        read_sts("STS17", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"STS14 deft-forum: .*STS.input.deft-forum.txt not found"):
        read_sts("STS14", tmp_path)


def test_sick_semeval_split(tmp_path: Path) -> None:
    folder = tmp_path / "sick" / "senteval"
    folder.mkdir(parents=True)
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r\n"
    (folder / "SICK_trial.txt").write_text(
        header + "1\tA boy plays.\tA kid plays.\t4.5\tENTAILMENT\r\n2\tA b.\tC d.\t0.5\tNEUTRAL\r\n", "utf-8"
    )
    with pytest.raises(DataFormatError, match=r"SICK_trial.txt:3: score 0.5 is outside 1-5"):
        read_sick("trial", tmp_path)
    pairs = read_sick("trial", tmp_path, skip_bad_lines=True)
    assert [(p.sentence1, p.sentence2, p.score) for p in pairs] == [("A boy plays.", "A kid plays.", 4.5)]
