"""Every numeric option of the command line is range-checked where argparse parses it, the accepted
range in the message (sbert.cli.common's checkers); the library refuses the same values, and no JSON
the project writes holds NaN or Infinity."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

from sbert.base import json_text
from sbert.cli import build_parser, main
from sbert.cli.common import (
    finite_float,
    int_in,
    non_negative_float,
    positive_float,
    positive_int,
    unit_interval,
)


def _leaf_parsers(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """(command words, parser) of every subcommand that runs something."""
    nested = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not nested:
        yield prefix, parser
    for action in nested:
        seen: set[int] = set()
        for name, sub in action.choices.items():
            if id(sub) not in seen:  # aliases share a parser
                seen.add(id(sub))
                yield from _leaf_parsers(sub, (*prefix, name))


def test_no_numeric_option_is_parsed_without_a_range() -> None:
    unchecked = [
        f"sbert {' '.join(words)} {action.option_strings[0]}"
        for words, parser in _leaf_parsers(build_parser())
        for action in parser._actions
        if action.type in (int, float)
    ]
    assert unchecked == []


# The commands, up to the option under test.
SEARCH, CORPUS = ["search", "q", "--index", "i"], ["search", "q", "--corpus", "c"]
ENCODE, BUILD = ["encode", "in.txt", "-o", "o.npy"], ["index", "build", "--corpus", "c", "-o", "i"]
CLUSTER, TRAIN = ["cluster", "in.txt"], ["train", "stsb", "-o", "out"]
WHOLE, FINITE = "expected a whole number of at least 1", "expected a finite number of at least 0"


@pytest.mark.parametrize(
    ("command", "option", "expected"),
    [
        (SEARCH, ["--query-cut", "-5"], f"--query-cut: {WHOLE}, got '-5'"),
        (SEARCH, ["--query-cut", "0"], f"--query-cut: {WHOLE}, got '0'"),
        (SEARCH, ["--heap-factor", "-1"], f"--heap-factor: {FINITE}, got '-1'"),
        (SEARCH, ["--heap-factor", "nan"], f"--heap-factor: {FINITE}, got 'nan'"),
        (SEARCH, ["--weights", "nan", "1"], f"--weights: {FINITE}, got 'nan'"),
        (SEARCH, ["--weights", "inf", "1"], f"--weights: {FINITE}, got 'inf'"),
        (SEARCH, ["--weights", "-1", "1"], f"--weights: {FINITE}, got '-1'"),
        (CORPUS, ["-k", "0"], f"--top-k/-k: {WHOLE}, got '0'"),
        (
            SEARCH,
            ["--rescore-with", "M", "--rescore-candidates", "0"],
            f"--rescore-candidates: {WHOLE}, got '0'",
        ),
        (CORPUS, ["--fusion-candidates", "0"], WHOLE),
        (ENCODE, ["--batch-size", "0"], f"--batch-size: {WHOLE}, got '0'"),
        (ENCODE, ["--batch-size", "2.5"], f"--batch-size: {WHOLE}, got '2.5'"),
        (ENCODE, ["--max-tokens", "-1"], f"--max-tokens: {WHOLE}"),
        (ENCODE, ["--dimensions", "0"], f"--dimensions: {WHOLE}"),
        (CLUSTER, ["--threshold", "1.5"], "--threshold: expected a finite number from -1 to 1, got '1.5'"),
        (CLUSTER, ["--threshold", "nan"], "--threshold: expected a finite number from -1 to 1, got 'nan'"),
        (["mine", "in.txt"], ["--min-score", "inf"], "--min-score: expected a finite number, got 'inf'"),
        (BUILD, ["--max-memory", "0"], "expected a memory size above 0"),
        (BUILD, ["--max-memory", "lots"], "not a memory size: 'lots'"),
        (["serve"], ["--port", "70000"], "--port: expected a whole number from 0 to 65535, got '70000'"),
        (["serve"], ["--batch-wait-ms", "nan"], f"--batch-wait-ms: {FINITE}, got 'nan'"),
        (["serve"], ["--drain-timeout", "-1"], f"--drain-timeout: {FINITE}"),
        (["serve"], ["--max-items", "0"], f"--max-items: {WHOLE}, got '0'"),
        (TRAIN, ["--warmup", "1.5"], "--warmup: expected a finite number from 0 to 1, got '1.5'"),
        (TRAIN, ["--lr", "0"], "--lr: expected a finite number above 0, got '0'"),
        (TRAIN, ["--lr", "nan"], "--lr: expected a finite number above 0, got 'nan'"),
        (["train", "sparse", "-o", "out"], ["--query-regularizer-weight", "-1"], f"{FINITE}, got '-1'"),
        (
            ["distill", "static", "-o", "out"],
            ["--learning-rate", "-0.1"],
            "--learning-rate: expected a finite number above 0",
        ),
    ],
)
def test_out_of_range_values_are_refused_with_the_range(
    command: list[str], option: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, *option])
    assert exit_info.value.code == 2  # a usage error, before any model or index is read
    assert expected in capsys.readouterr().err


def test_hybrid_weights_that_are_both_zero_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "search",
        "q",
        "--index",
        "d",
        "--sparse-index",
        "s",
        "--fusion",
        "weighted",
        "--weights",
        "0",
        "0",
    ]
    assert main(argv) == 1
    assert "--weights 0 0: at least one of the two weights must be above 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("parse", "good", "bad"),
    [
        (positive_int, {"1": 1, "12": 12}, ["0", "-3", "1.0", "x", ""]),
        (int_in(0, 3), {"0": 0, "3": 3}, ["-1", "4"]),
        (finite_float, {"-2.5": -2.5, "1e3": 1000.0}, ["nan", "inf", "-inf", "x"]),
        (non_negative_float, {"0": 0.0, "2": 2.0}, ["-0.001", "nan", "inf"]),
        (positive_float, {"1e-9": 1e-9}, ["0", "-1", "nan"]),
        (unit_interval, {"0": 0.0, "1": 1.0, "0.5": 0.5}, ["-0.1", "1.01", "nan"]),
    ],
)
def test_the_checkers(parse, good: dict[str, float], bad: list[str]) -> None:  # type: ignore[no-untyped-def]
    for text, value in good.items():
        assert parse(text) == value
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=f"got {text!r}"):
            parse(text)


def _seismic_index():  # type: ignore[no-untyped-def]
    from sbert.index.sparse_index import SparseIndex

    corpus = scipy.sparse.random(60, 50, density=0.2, format="csr", random_state=0, dtype=np.float32)
    return SparseIndex.build(corpus, kind="seismic"), corpus


def _seismic_search(**settings: float) -> None:
    index, corpus = _seismic_index()
    index.search(corpus[:2], top_k=3, **settings)  # type: ignore[arg-type]


def _fuse(weights: tuple[float, float]) -> None:
    from sbert.embeddings.search import Hit
    from sbert.index.hybrid import fuse

    fuse([[Hit(1, 0.5)]], [[Hit(1, 2.0)]], "weighted", weights=weights)


def _server_settings(name: str):  # type: ignore[no-untyped-def]
    from sbert.server import settings

    return getattr(settings, name)


# What the library builds or runs from each value the command line range-checks, by name.
LIBRARY = {
    "seismic search": _seismic_search,
    "fusion": _fuse,
    "BatchSettings": lambda **settings: _server_settings("BatchSettings")(**settings),
    "Limits": lambda **settings: _server_settings("Limits")(**settings),
    "ServeOptions": lambda **settings: _server_settings("ServeOptions")(**settings),
}
FUSION_REFUSED = "fusion weights must be finite, 0 or more and not all 0"


@pytest.mark.parametrize(
    ("where", "settings", "message"),
    [
        ("seismic search", {"query_cut": -5}, "query_cut must be a whole number of at least 1, got -5"),
        ("seismic search", {"query_cut": 0}, "query_cut must be a whole number of at least 1, got 0"),
        (
            "seismic search",
            {"heap_factor": -1.0},
            "heap_factor must be a finite number of at least 0, got -1.0",
        ),
        (
            "seismic search",
            {"heap_factor": float("nan")},
            "heap_factor must be a finite number of at least 0, got nan",
        ),
        ("fusion", {"weights": (0.0, 0.0)}, FUSION_REFUSED),
        ("fusion", {"weights": (float("nan"), 1.0)}, FUSION_REFUSED),
        ("fusion", {"weights": (float("inf"), 1.0)}, FUSION_REFUSED),
        (
            "BatchSettings",
            {"batch_wait_ms": float("nan")},
            "batch_wait_ms must be a finite number of at least 0.0, got nan",
        ),
        (
            "BatchSettings",
            {"max_batch_size": 0},
            "max_batch_size must be a whole number of at least 1, got 0",
        ),
        ("Limits", {"max_items": 0}, "max_items must be a whole number of at least 1, got 0"),
        ("Limits", {"max_body_bytes": -1}, "max_body_bytes must be a whole number of at least 1"),
        ("ServeOptions", {"port": 70000}, "port must be a whole number from 0 to 65535, got 70000"),
        (
            "ServeOptions",
            {"drain_timeout": float("inf")},
            "drain_timeout must be a finite number of at least 0.0",
        ),
        (
            "ServeOptions",
            {"max_concurrent_requests": 0},
            "max_concurrent_requests must be a whole number of at least 1",
        ),
    ],
)
def test_the_library_refuses_the_same_values(where: str, settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LIBRARY[where](**settings)


def test_a_zero_heap_factor_is_used_not_replaced_by_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from sbert.index import seismic

    index, corpus = _seismic_index()
    seen: list[dict[str, float]] = []
    real = seismic.search
    monkeypatch.setattr(seismic, "search", lambda e, q, k, s: seen.append(dict(s)) or real(e, q, k, s))
    index.search(corpus[:1], top_k=3, heap_factor=0.0)
    assert seen[0]["heap_factor"] == 0.0


def test_json_is_written_without_nan_and_names_the_place() -> None:
    with pytest.raises(ValueError, match=r"\['metrics'\]\['spearman'\] is nan"):
        json_text.dumps({"metrics": {"pearson": 0.5, "spearman": float("nan")}})
    with pytest.raises(ValueError, match=r"\['scores'\]\[1\] is inf"):
        json_text.dumps({"scores": [1.0, float("inf")]})
    assert json.loads(json_text.dumps({"a": [1.0, 2]})) == {"a": [1.0, 2]}


def test_a_report_with_nan_is_refused_not_written_as_invalid_json(tmp_path: Path) -> None:
    from sbert.training.log import TrainingLog

    log = TrainingLog(tmp_path / "log.jsonl")
    with pytest.raises(ValueError, match=r"\['loss'\] is nan"):
        log.write({"step": 1, "loss": float("nan")})
    assert log.records() == []
