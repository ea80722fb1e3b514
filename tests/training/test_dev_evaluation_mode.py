"""Evaluation during training scores the weights in eval mode (no dropout), even where the
evaluator runs the model's ``forward`` itself, and training continues in training mode."""

from __future__ import annotations

from pathlib import Path

import torch

from sbert import SentenceEncoder
from sbert.training.dev_evaluation import evaluate_during_training

SENTENCES = ["a man plays the guitar", "the dog runs in the park"]


class ForwardNorm:
    """An evaluator that calls ``forward`` (what a loss calls), not ``encode``."""

    primary_metric = "norm"

    def __call__(self, model: SentenceEncoder) -> dict[str, float]:
        features = model.tokenize(SENTENCES)
        with torch.no_grad():
            vectors = model(features)  # (batch, dim)
        return {"norm": float(vectors.double().norm())}


def test_dev_scores_are_eval_mode_scores_and_the_mode_is_back(tiny_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    expected = ForwardNorm()(model.eval())["norm"]
    model.train()
    for _ in range(2):
        scores, score = evaluate_during_training(ForwardNorm(), model, "norm", show_progress_bar=False)
        assert score == expected and scores == {"norm": expected}
    assert all(part.training for part in model.modules())
