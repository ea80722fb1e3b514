"""Inference runs in eval mode for every kind (sbert.base.modes): after ``model.train()``, ``encode``,
``encode_query``/``encode_document``, ``predict`` and ``rank`` give the eval-mode answers bit for bit
(no dropout), and the model is back in the caller's mode afterwards, part by part."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tests.sparse.conftest import build_tiny_mlm

from sbert import CrossEncoder, SentenceEncoder, SparseEncoder
from sbert.base.modes import evaluating

SENTENCES = ["a man plays the guitar", "the dog runs in the park", "rain on the street"]
PAIRS = [(SENTENCES[0], SENTENCES[1]), (SENTENCES[2], SENTENCES[0])]


def _dense(tiny_model_dir: Path, _: Path) -> tuple[Any, Callable[[Any], Any]]:
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    return model, lambda m: m.encode(SENTENCES, convert_to_tensor=True)


def _dense_query(tiny_model_dir: Path, _: Path) -> tuple[Any, Callable[[Any], Any]]:
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    return model, lambda m: torch.as_tensor(
        np.concatenate([m.encode_query(SENTENCES[:1]), m.encode_document(SENTENCES[1:])])
    )


def _sparse(_: Path, mlm_dir: Path) -> tuple[Any, Callable[[Any], Any]]:
    model = SparseEncoder.from_pretrained(mlm_dir, device="cpu", precision="float32", backend="torch")
    return model, lambda m: m.encode(SENTENCES).to_dense()


def _sparse_query(_: Path, mlm_dir: Path) -> tuple[Any, Callable[[Any], Any]]:
    model = SparseEncoder.from_pretrained(mlm_dir, device="cpu", precision="float32", backend="torch")
    return model, lambda m: torch.cat(
        [m.encode_query(SENTENCES[:1]), m.encode_document(SENTENCES[1:])]
    ).to_dense()


def _cross_predict(tiny_model_dir: Path, _: Path) -> tuple[Any, Callable[[Any], Any]]:
    torch.manual_seed(0)
    model = CrossEncoder.from_pretrained(
        tiny_model_dir, num_labels=1, device="cpu", precision="float32", backend="torch"
    )
    return model, lambda m: torch.as_tensor(m.predict(PAIRS))


def _cross_rank(tiny_model_dir: Path, _: Path) -> tuple[Any, Callable[[Any], Any]]:
    torch.manual_seed(0)
    model = CrossEncoder.from_pretrained(
        tiny_model_dir, num_labels=1, device="cpu", precision="float32", backend="torch"
    )
    return model, lambda m: torch.tensor([hit["score"] for hit in m.rank(SENTENCES[0], SENTENCES)])


CASES = {
    "dense encode": _dense,
    "dense encode_query/document": _dense_query,
    "sparse encode": _sparse,
    "sparse encode_query/document": _sparse_query,
    "cross predict": _cross_predict,
    "cross rank": _cross_rank,
}


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_mlm(tmp_path_factory.mktemp("mlm"))


@pytest.mark.parametrize("case", list(CASES))
def test_after_train_the_answers_are_the_eval_modes_bit_for_bit_and_the_mode_is_back(
    case: str, tiny_model_dir: Path, mlm_dir: Path
) -> None:
    model, run = CASES[case](tiny_model_dir, mlm_dir)
    assert any(isinstance(part, torch.nn.Dropout) and part.p > 0 for part in model.modules())  # else no test
    model.eval()
    expected = run(model)
    model.train()
    frozen = next(part for part in model.modules() if isinstance(part, torch.nn.Dropout))
    frozen.eval()  # a part the caller put in eval mode stays so
    for _ in range(2):  # dropout would differ from call to call
        assert torch.equal(run(model), expected)
    assert model.training and not frozen.training
    assert all(part.training for part in model.modules() if part is not frozen)


def test_evaluating_restores_each_parts_mode_after_an_error() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5)).train()
    model[0].eval()
    with pytest.raises(RuntimeError), evaluating(model):
        assert not model[1].training
        raise RuntimeError("boom")
    assert model.training and not model[0].training and model[1].training


def test_a_model_already_in_eval_mode_stays_so(tiny_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32")
    model.encode(SENTENCES)
    assert not any(part.training for part in model.modules())
    np.testing.assert_array_equal(model.encode(SENTENCES), model.encode(SENTENCES))
