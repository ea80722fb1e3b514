import math
from pathlib import Path

import pytest
import torch

from sbert.cross_encoder import CrossEncoder
from sbert.data.records import LabeledPair, ScoredPair
from sbert.evaluation.cross_encoder import CrossEncoderEvaluator
from sbert.losses.cross_encoder import CrossEncoderLoss
from sbert.training import Trainer, TrainingConfig

PAIRS = [
    ScoredPair("a man plays the guitar", "a man plays music", 5.0),
    ScoredPair("a dog runs in the park", "the sun is big", 0.0),
    ScoredPair("a cat eats food", "a cat is eating", 4.0),
    ScoredPair("red car", "blue rain", 1.0),
]


def test_regression_loss_is_bce_on_scaled_score(trainable_model_dir: Path) -> None:
    torch.manual_seed(0)
    model = CrossEncoder.from_pretrained(trainable_model_dir, num_labels=1, device="cpu")
    loss = CrossEncoderLoss(model)
    logits = model(model.collate([(p.sentence1, p.sentence2) for p in PAIRS]))[:, 0].detach()
    targets = torch.tensor([p.score / 5 for p in PAIRS])
    expected = -(
        targets * torch.log(torch.sigmoid(logits)) + (1 - targets) * torch.log(1 - torch.sigmoid(logits))
    )
    assert loss(PAIRS).item() == pytest.approx(expected.mean().item(), rel=1e-5)


def test_classification_loss_and_bad_examples(trainable_model_dir: Path) -> None:
    torch.manual_seed(0)
    model = CrossEncoder.from_pretrained(
        trainable_model_dir, num_labels=2, label_names=["no", "yes"], device="cpu"
    )
    loss = CrossEncoderLoss(model)
    value = loss([LabeledPair("a", "b", "yes"), LabeledPair("c", "d", "no")]).item()
    assert 0 < value < 5 * math.log(2)
    with pytest.raises(ValueError, match="example 1 needs a label among"):
        loss([LabeledPair("a", "b", "yes"), LabeledPair("c", "d", "maybe")])
    with pytest.raises(ValueError, match=r"example 0 needs a score in \[0.0, 5.0\]"):
        CrossEncoderLoss(CrossEncoder.from_pretrained(trainable_model_dir, num_labels=1))(
            [ScoredPair("a", "b", 7.0)]
        )


def test_trainer_fits_a_tiny_cross_encoder(trainable_model_dir: Path, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = CrossEncoder.from_pretrained(trainable_model_dir, num_labels=1, device="cpu")
    objective = CrossEncoderLoss(model)
    with torch.no_grad():
        before = objective(PAIRS).item()
    spearman_before = CrossEncoderEvaluator(PAIRS)(model)["spearman"]
    config = TrainingConfig(
        epochs=30, batch_size=4, learning_rate=1e-3, warmup_fraction=0.0, show_progress_bar=False
    )
    Trainer(objective, PAIRS, tmp_path / "out", config, CrossEncoderEvaluator(PAIRS)).train()
    reloaded = CrossEncoder.from_pretrained(tmp_path / "out", device="cpu")
    with torch.no_grad():
        after = CrossEncoderLoss(reloaded)(PAIRS).item()
    assert after < before
    assert CrossEncoderEvaluator(PAIRS)(reloaded)["spearman"] > max(spearman_before, 50)
