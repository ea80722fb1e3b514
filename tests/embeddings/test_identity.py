from pathlib import Path

import pytest
import torch

from sbert import SentenceEncoder
from sbert.embeddings.identity import ModelIdentity, ModelMismatchError, check_same_model, model_identity


def test_identity_round_trips_and_matches_the_same_weights(tiny_model_dir: Path) -> None:
    first = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu")
    second = SentenceEncoder.from_pretrained(str(tiny_model_dir), device="cpu")
    stored = ModelIdentity.from_dict(model_identity(first).to_dict())
    check_same_model(stored, second, "store")  # same weights and pipeline: accepted


def test_other_pooling_is_refused_and_named(tiny_model_dir: Path) -> None:
    stored = model_identity(SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu"))
    cls_model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", pooling="cls")
    with pytest.raises(ModelMismatchError, match="pooling 'mean' vs 'cls'"):
        check_same_model(stored, cls_model, "index")


def test_changed_weights_are_refused(tiny_model_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu")
    stored = model_identity(model)
    with torch.no_grad():
        next(model.parameters()).add_(0.01)
    with pytest.raises(ModelMismatchError, match="weights differ"):
        check_same_model(stored, model, "index")
