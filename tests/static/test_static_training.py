"""A static model trains as a transformer does: the same losses, ST's loss values and gradients, and
``sbert train file`` writes a model that sentence-transformers loads with the same vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.cli import main
from sbert.data import Triplet
from sbert.losses import CachedMultipleNegativesRankingLoss, MultipleNegativesRankingLoss
from sbert.static import StaticEncoder

BATCH = [
    Triplet("a man plays the guitar", "a man is playing music", "a dog runs in the park"),
    Triplet("the cat sleeps in the sun", "a cat is sleeping", "the woman cooks food"),
    Triplet("rain in the street", "the street is wet", ""),  # an empty sentence: the zero vector
    Triplet("a child is eating food", "the child eats", "code and test"),
]
COLUMNS = ("anchor", "positive", "negative")


def test_mnrl_on_a_static_model_matches_sentence_transformers(static_dir: Path) -> None:
    st = pytest.importorskip("sentence_transformers")
    ours = SentenceEncoder.from_pretrained(static_dir)
    assert isinstance(ours, StaticEncoder)
    value = MultipleNegativesRankingLoss(ours)(BATCH)
    value.backward()

    st_losses = pytest.importorskip("sentence_transformers.sentence_transformer.losses")
    reference = st.SentenceTransformer(str(static_dir), device="cpu")
    columns = [reference.preprocess([getattr(t, name) for t in BATCH]) for name in COLUMNS]
    expected = st_losses.MultipleNegativesRankingLoss(reference)(columns, labels=None)
    expected.backward()

    assert value.item() == pytest.approx(expected.item(), abs=1e-5)
    ours_grad = ours.input_module.embedding.weight.grad
    theirs_grad = reference[0].embedding.weight.grad
    assert ours_grad is not None and theirs_grad is not None and ours_grad.abs().sum() > 0
    torch.testing.assert_close(ours_grad, theirs_grad, atol=1e-6, rtol=1e-4)


def test_cached_mnrl_on_a_static_model_gives_plain_gradients(static_model: StaticEncoder) -> None:
    def gradient(loss: torch.nn.Module) -> torch.Tensor:
        static_model.zero_grad()
        loss(BATCH).backward()
        assert static_model.input_module.embedding.weight.grad is not None
        return static_model.input_module.embedding.weight.grad.clone()

    plain = gradient(MultipleNegativesRankingLoss(static_model))
    cached = gradient(CachedMultipleNegativesRankingLoss(static_model, mini_batch_size=3))
    torch.testing.assert_close(cached, plain, atol=1e-6, rtol=1e-4)


def test_sbert_train_file_fine_tunes_a_static_model(
    static_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    st = pytest.importorskip("sentence_transformers")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"anchor": t.anchor, "positive": t.positive}) + "\n" for t in BATCH))
    monkeypatch.delenv("SBERT_DATA", raising=False)  # no STSb dev: no evaluation during training
    trained = tmp_path / "trained"
    argv = ["train", "file", "--train", str(pairs), "--loss", "mnrl", "--base", str(static_dir)]
    argv += ["--output", str(trained), "--batch-size", "4", "--epochs", "3", "--lr", "0.1"]
    assert main([*argv, "--no-progress", "--device", "cpu"]) == 0

    assert json.loads((trained / "results.json").read_text())["steps"] == 3
    before = SentenceEncoder.from_pretrained(static_dir)
    after = SentenceEncoder.from_pretrained(trained)
    assert isinstance(after, StaticEncoder)
    anchors = [t.anchor for t in BATCH]
    positives = [t.positive for t in BATCH]

    def agreement(model: SentenceEncoder) -> float:
        """How much more each anchor resembles its own positive than the others (MNRL's aim)."""
        scores = model.encode(anchors, normalize=True) @ model.encode(positives, normalize=True).T
        return float(np.diag(scores).mean() - scores.mean())

    assert agreement(after) > agreement(before)
    reference = st.SentenceTransformer(str(trained), device="cpu")
    np.testing.assert_allclose(reference.encode(anchors), after.encode(anchors), atol=1e-6)


def test_a_static_model_trains_at_its_own_default_learning_rate(
    static_model: StaticEncoder, tiny_encoder: SentenceEncoder
) -> None:
    from sbert.training.recipes import STATIC_LEARNING_RATE, RecipeConfig

    config = RecipeConfig("file", "out", train_file="pairs.jsonl", loss="mnrl")
    assert config.training_config("file", static_model).learning_rate == STATIC_LEARNING_RATE
    assert config.training_config("file", tiny_encoder).learning_rate == 2e-5
    chosen = RecipeConfig("file", "out", train_file="pairs.jsonl", loss="mnrl", learning_rate=1e-3)
    assert chosen.training_config("file", static_model).learning_rate == 1e-3
