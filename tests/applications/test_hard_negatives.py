"""Hard-negative mining against sentence-transformers' ``mine_hard_negatives`` (the oracle) on a tiny
random BERT, and its bad input."""

from __future__ import annotations

import json
import random
import sys
import types
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import WORDS

from sbert import SentenceEncoder
from sbert.applications.hard_negatives import (
    MinedRow,
    MiningOptions,
    MiningResult,
    mine_hard_negatives,
    write_mined,
)
from sbert.data.records import NegativesTuple, ScoredPair, Triplet
from sbert.data.training_files import read_positive_pairs_or_triplets, read_scored_pairs, read_triplets


class _Dataset:
    """The little of ``datasets.Dataset`` that ST's ``mine_hard_negatives`` touches (neither ``datasets``
    nor ``pandas`` is installed here): columns by name, its row count, and a per-anchor count."""

    def __init__(self, columns: dict[str, list[Any]]) -> None:
        self.columns = columns

    @classmethod
    def from_dict(cls, columns: dict[str, list[Any]]) -> _Dataset:
        return cls(columns)

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def __getitem__(self, name: str) -> list[Any]:
        return self.columns[name]

    def rows(self) -> list[tuple[Any, ...]]:
        return list(zip(*self.columns.values()))

    def to_pandas(self) -> Any:
        # groupby(anchor).count().to_dict()[positive].values(): the number of rows of each anchor.
        anchor, positive = self.column_names[:2]
        counts = dict(Counter(self.columns[anchor]))
        frame = types.SimpleNamespace(to_dict=lambda: {positive: counts})
        grouped = types.SimpleNamespace(count=lambda: frame)
        return types.SimpleNamespace(groupby=lambda _: grouped)


@pytest.fixture()
def oracle(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import sentence_transformers.util.hard_negatives as module

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(Dataset=_Dataset))
    monkeypatch.setattr(module, "is_datasets_available", lambda: True)
    yield module.mine_hard_negatives


def sentences(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return list(
        dict.fromkeys(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(count))
    )


def make_pairs() -> list[tuple[str, str]]:
    texts = sentences(90, 1)
    pairs = list(zip(texts[:40], texts[40:80]))
    # Two anchors with a second positive, and one repeated row: ST groups them by anchor.
    return [*pairs, (pairs[0][0], texts[80]), (pairs[3][0], texts[81]), pairs[5]]


PAIRS = make_pairs()
SETTINGS = [
    {},
    {"num_negatives": 4, "range_min": 2},
    {"absolute_margin": 0.0, "max_score": 0.99},
    {"relative_margin": 0.001, "range_max": 20, "num_negatives": 3},
    {"min_score": 0.8, "num_negatives": 2, "range_max": 30},
    {"include_positives": True, "num_negatives": 5},
    {"max_score": 0.95, "range_max": 6, "num_negatives": 3},  # short rows, and rows with no negative
]


@pytest.fixture(scope="module")
def models(tiny_model_dir: Path) -> tuple[SentenceEncoder, Any]:
    from sentence_transformers import SentenceTransformer

    ours = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32", backend="torch")
    return ours, SentenceTransformer(str(tiny_model_dir), device="cpu")


def as_rows(result: MiningResult) -> list[tuple[str, ...]]:
    return [(row.anchor, row.positive, *row.negatives) for row in result.rows]


@pytest.mark.parametrize("output_format", ["n-tuple", "triplet", "labeled-pair", "labeled-list"])
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(s) or "defaults")
def test_top_equals_sentence_transformers(
    models: tuple[SentenceEncoder, Any], oracle: Any, settings: dict[str, Any], output_format: str
) -> None:
    ours, theirs = models
    if settings.get("include_positives") and output_format != "n-tuple":
        pytest.skip("include_positives writes n-tuples only (tested below)")
    dataset = _Dataset({"anchor": [a for a, _ in PAIRS], "positive": [p for _, p in PAIRS]})
    expected = oracle(dataset, theirs, output_format=output_format, verbose=False, **settings).rows()
    result = mine_hard_negatives(PAIRS, ours, MiningOptions(output_format=output_format, **settings))
    assert result.table() == expected
    assert len(expected) > 0
    if output_format in ("n-tuple", "triplet"):
        assert as_rows(result) == expected


def test_random_equals_sentence_transformers_under_the_same_seed(
    models: tuple[SentenceEncoder, Any], oracle: Any
) -> None:
    ours, theirs = models
    dataset = _Dataset({"anchor": [a for a, _ in PAIRS], "positive": [p for _, p in PAIRS]})
    random.seed(7)
    expected = oracle(
        dataset,
        theirs,
        sampling_strategy="random",
        range_max=15,
        num_negatives=3,
        verbose=False,
        output_format="n-tuple",
    ).rows()
    result = mine_hard_negatives(
        PAIRS, ours, MiningOptions(sampling_strategy="random", range_max=15, num_negatives=3, seed=7)
    )
    assert as_rows(result) == expected
    top = mine_hard_negatives(PAIRS, ours, MiningOptions(range_max=15, num_negatives=3))
    assert as_rows(result) != as_rows(top)  # the draw is not simply the best three


def test_an_extra_corpus_equals_sentence_transformers(
    models: tuple[SentenceEncoder, Any], oracle: Any
) -> None:
    ours, theirs = models
    corpus = sentences(60, 2)
    dataset = _Dataset({"anchor": [a for a, _ in PAIRS], "positive": [p for _, p in PAIRS]})
    expected = oracle(dataset, theirs, corpus=corpus, num_negatives=2, verbose=False, output_format="n-tuple")
    result = mine_hard_negatives(PAIRS, ours, MiningOptions(num_negatives=2), corpus=corpus)
    assert as_rows(result) == expected.rows()
    assert any(
        negative in corpus and negative not in dict(PAIRS).values()
        for row in result.rows
        for negative in row.negatives
    )


def test_a_cross_encoder_filter_equals_sentence_transformers(
    models: tuple[SentenceEncoder, Any], oracle: Any, tiny_model_dir: Path, tmp_path: Path
) -> None:
    import torch
    from sentence_transformers import CrossEncoder as TheirCrossEncoder

    from sbert.cross_encoder import CrossEncoder

    torch.manual_seed(3)
    CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu").save(tmp_path / "ce")
    # float32: exact, as theirs (the default engine may run bf16, which can reorder near-ties)
    judge = CrossEncoder.from_pretrained(tmp_path / "ce", device="cpu", precision="float32")
    ours, theirs = models
    dataset = _Dataset({"anchor": [a for a, _ in PAIRS], "positive": [p for _, p in PAIRS]})
    settings = {"absolute_margin": 0.0, "num_negatives": 2, "range_max": 12}
    expected = oracle(
        dataset,
        theirs,
        cross_encoder=TheirCrossEncoder(str(tmp_path / "ce"), device="cpu"),
        verbose=False,
        output_format="n-tuple",
        **settings,
    ).rows()
    result = mine_hard_negatives(PAIRS, ours, MiningOptions(**settings), cross_encoder=judge)
    assert as_rows(result) == expected
    assert result.skipped["absolute_margin"] > 0
    plain = mine_hard_negatives(PAIRS, ours, MiningOptions(**settings))
    assert as_rows(plain) != as_rows(result)  # the judge changed what was kept


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_an_index_finds_the_negatives_exact_search_finds(
    models: tuple[SentenceEncoder, Any], kind: str
) -> None:
    ours, _ = models
    exact = mine_hard_negatives(PAIRS, ours, MiningOptions(num_negatives=3))
    indexed = mine_hard_negatives(PAIRS, ours, MiningOptions(num_negatives=3, index_kind=kind))
    assert as_rows(indexed) == as_rows(exact)


def test_filters_are_counted_and_short_rows_reported(models: tuple[SentenceEncoder, Any]) -> None:
    ours, _ = models
    result = mine_hard_negatives(PAIRS, ours, MiningOptions(num_negatives=3, range_max=6, max_score=0.9))
    assert result.skipped["max_score"] > 0 and result.missing > 0
    assert all(score <= 0.9 for row in result.rows for score in row.negative_scores)
    assert len(result.rows) + result.missing == len(set(PAIRS))
    assert "could not fill" in result.summary()
    triplets = mine_hard_negatives(
        PAIRS, ours, MiningOptions(num_negatives=3, range_max=6, max_score=0.9, output_format="triplet")
    )
    assert len(triplets.rows) + triplets.missing == 3 * len(set(PAIRS))


def test_labeled_formats_keep_the_negatives_found(models: tuple[SentenceEncoder, Any]) -> None:
    # A list per (anchor, positive) that got a negative; a row per negative, once per anchor, and
    # every positive a row of labeled-pair even when its anchor got no negative.
    settings: dict[str, Any] = {"num_negatives": 3, "range_max": 6, "max_score": 0.95}
    lists = mine_hard_negatives(PAIRS, models[0], MiningOptions(output_format="labeled-list", **settings))
    sizes = Counter(len(labels) - 1 for _, _, labels in lists.table())
    assert sizes[3] and (sizes[1] or sizes[2]) and len(lists.table()) < len(set(PAIRS))
    assert sum(size * count for size, count in sizes.items()) + lists.missing == 3 * len(set(PAIRS))
    pairs = mine_hard_negatives(PAIRS, models[0], MiningOptions(output_format="labeled-pair", **settings))
    labels = Counter(label for _, _, label in pairs.table())
    assert labels[1] == len(set(PAIRS)) and labels[0] + pairs.missing == 3 * len(dict(PAIRS))
    assert f"{len(pairs.table())} rows (labeled-pair), {labels[0]} negatives" in pairs.summary()
    assert pairs.examples() == [
        ScoredPair(anchor, text, float(label)) for anchor, text, label in pairs.table()
    ]
    with pytest.raises(ValueError, match="no sbert loss trains on labeled lists"):
        lists.examples()


def test_negatives_are_never_the_anchors_own_positives(models: tuple[SentenceEncoder, Any]) -> None:
    ours, _ = models
    positives: dict[str, set[str]] = {}
    for anchor, positive in PAIRS:
        positives.setdefault(anchor, set()).add(positive)
    result = mine_hard_negatives(PAIRS, ours, MiningOptions(num_negatives=5))
    for row in result.rows:
        assert not positives[row.anchor] & set(row.negatives)
        assert list(row.negative_scores) == sorted(row.negative_scores, reverse=True)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"num_negatives": 0}, "num_negatives must be at least 1"),
        ({"sampling_strategy": "best"}, "unknown sampling_strategy 'best'"),
        ({"output_format": "labeled"}, "unknown output_format 'labeled'"),
        ({"range_min": -1}, "range_min must be at least 0"),
        ({"range_min": 5, "range_max": 5}, "range_min must be below range_max"),
        ({"range_min": 3, "range_max": 5, "num_negatives": 3}, "only 2 candidates"),
        ({"include_positives": True, "output_format": "triplet"}, "only the n-tuple format"),
        ({"include_positives": True, "output_format": "labeled-pair"}, "only the n-tuple format"),
    ],
)
def test_bad_settings_are_refused(
    models: tuple[SentenceEncoder, Any], settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        mine_hard_negatives(PAIRS, models[0], MiningOptions(**settings))


def test_a_cross_encoder_without_a_filter_is_refused(
    models: tuple[SentenceEncoder, Any], tiny_model_dir: Path
) -> None:
    from sbert.cross_encoder import CrossEncoder

    judge = CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu")
    with pytest.raises(ValueError, match="only judges the filters"):
        mine_hard_negatives(PAIRS, models[0], cross_encoder=judge)
    with pytest.raises(ValueError, match="no .anchor, positive. pairs"):
        mine_hard_negatives([], models[0])


@pytest.mark.parametrize("suffix", ["csv", "tsv", "jsonl"])
def test_written_files_are_what_training_reads(tmp_path: Path, suffix: str) -> None:
    rows = [
        MinedRow('a "quoted" dog', "a puppy, small", ("a cat", "a car"), 0.9, (0.5, 0.2)),
        MinedRow("rain", "water", ("sun", "space"), 0.8, (0.4, 0.1)),
    ]
    path = tmp_path / f"mined.{suffix}"
    write_mined(MiningResult(rows, "n-tuple", 2, 10), path)
    assert read_positive_pairs_or_triplets(path) == [
        NegativesTuple(row.anchor, row.positive, row.negatives) for row in rows
    ]
    single = [MinedRow(row.anchor, row.positive, row.negatives[:1], 0.0, (0.0,)) for row in rows]
    write_mined(MiningResult(single, "triplet", 1, 10), path)
    assert read_triplets(path) == [Triplet(row.anchor, row.positive, row.negatives[0]) for row in rows]


@pytest.mark.parametrize("suffix", ["csv", "tsv", "jsonl"])
def test_labeled_files_are_what_training_reads(tmp_path: Path, suffix: str) -> None:
    rows = [
        MinedRow('a "quoted" dog', "a puppy, small", ("a cat", "a car"), 0.9, (0.5, 0.2)),
        MinedRow('a "quoted" dog', "a young dog", ("a cat", "a car"), 0.8, (0.5, 0.2)),
        MinedRow("rain", "water", (), 0.8, ()),
    ]
    path = tmp_path / f"mined.{suffix}"
    pairs = MiningResult(rows, "labeled-pair", 2, 10)
    write_mined(pairs, path)
    first = path.read_text().splitlines()[0]
    assert first.replace("\t", ",") == "sentence1,sentence2,label" or first.startswith('{"sentence1"')
    # The label is a 0-1 score to the pair losses: the file trains with --loss cosent as it is.
    assert read_scored_pairs(path, (0.0, 1.0)) == pairs.examples()
    assert [example.score for example in pairs.examples()] == [1, 1, 0, 0, 1]
    lists = MiningResult(rows[:2], "labeled-list", 2, 10)
    if suffix != "jsonl":
        with pytest.raises(
            ValueError, match=rf"mined.{suffix}: labeled-list rows hold lists .* write .jsonl"
        ):
            write_mined(lists, path)
        return
    write_mined(lists, path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[1] == {
        "anchor": 'a "quoted" dog',
        "passages": ["a young dog", "a cat", "a car"],
        "labels": [1, 0, 0],
    }


def test_tsv_refuses_a_text_with_a_tab(tmp_path: Path) -> None:
    rows = [MinedRow("a", "b", ("c",), 0.0, (0.0,)), MinedRow("a\tb", "c", ("d",), 0.0, (0.0,))]
    with pytest.raises(ValueError, match=r"mined.tsv: line 3 would hold a tab"):
        write_mined(MiningResult(rows, "triplet", 1, 10), tmp_path / "mined.tsv")
    assert not (tmp_path / "mined.tsv").exists()


def test_a_saved_index_gives_the_rows_of_exact_search(
    models: tuple[SentenceEncoder, Any], tmp_path: Path
) -> None:
    from sbert.embeddings.truncation import truncate_embeddings
    from sbert.index import VectorIndex

    ours, _ = models
    corpus = sentences(60, 2)
    texts = list(dict.fromkeys([*corpus, *(p for _, p in PAIRS)]))
    # The corpus twice under other ids: a text the index holds twice is one candidate.
    vectors = ours.encode_document(texts + texts[:10], normalize=True)
    VectorIndex.build(vectors, texts=texts + texts[:10], kind="flat", model_name=ours.name).save(
        tmp_path / "idx"
    )
    index = VectorIndex.load(tmp_path / "idx", model=ours)
    for settings in ({"num_negatives": 3}, {"absolute_margin": 0.0, "num_negatives": 2, "range_min": 1}):
        exact = mine_hard_negatives(PAIRS, ours, MiningOptions(**settings), corpus=corpus)
        assert as_rows(mine_hard_negatives(PAIRS, ours, MiningOptions(**settings), index=index)) == as_rows(
            exact
        )
    prefix = VectorIndex.build(vectors[:, :16], texts=texts + texts[:10], kind="flat")
    prefix.truncated_from = vectors.shape[1]  # as build(dimensions=16) records it
    row = mine_hard_negatives(PAIRS, ours, MiningOptions(num_negatives=2), index=prefix).rows[0]
    cut = truncate_embeddings(ours.encode([row.anchor, row.positive]), 16)
    assert row.positive_score == pytest.approx(float(cut[0] @ cut[1]), abs=1e-5)
    assert len(set(row.negatives)) == 2
    with pytest.raises(ValueError, match="a saved index is the corpus"):
        mine_hard_negatives(PAIRS, ours, index=index, corpus=corpus)
    bare = VectorIndex.build(vectors, kind="flat")  # no texts
    with pytest.raises(ValueError, match="holds no text for corpus id"):
        mine_hard_negatives(PAIRS, ours, index=bare)
