import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert.base.errors import ModelLoadError
from sbert.cross_encoder import CONFIG_FILE, CrossEncoder

PAIRS = [
    ("a man plays guitar", "a man plays music"),
    ("the dog runs in the park", "a cat eats food"),
    ("rain", "the sun is big and happy and not sad at all in the park with the dog"),
]


@pytest.fixture()
def regression(tiny_model_dir: Path) -> CrossEncoder:
    torch.manual_seed(0)
    return CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, device="cpu", precision="float32")


def test_pair_tokens_are_cls_a_sep_b_sep(regression: CrossEncoder) -> None:
    tokenized = regression.tokenize([("a man", "the dog")])
    tokens = regression.tokenizer.convert_ids_to_tokens(tokenized.ids[0])
    first_sep = tokens.index("[SEP]")
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and tokens.count("[SEP]") == 2
    types = tokenized.token_types[0]
    assert types == [0] * (first_sep + 1) + [1] * (len(tokens) - first_sep - 1)


def test_long_pairs_are_truncated(tiny_model_dir: Path) -> None:
    model = CrossEncoder.from_pretrained(tiny_model_dir, num_labels=1, max_seq_length=8, device="cpu")
    tokenized = model.tokenize([PAIRS[2]])
    assert tokenized.lengths == [8] and tokenized.truncated == 1


def test_predict_regression_in_unit_interval_and_order_independent(regression: CrossEncoder) -> None:
    scores = regression.predict(PAIRS, batch_size=2)
    assert scores.shape == (3,) and ((scores > 0) & (scores < 1)).all()
    one_by_one = np.array([regression.predict([pair])[0] for pair in PAIRS])
    np.testing.assert_allclose(scores, one_by_one, atol=1e-5)
    logits = regression.predict(PAIRS, apply_activation=False)
    np.testing.assert_allclose(scores, 1 / (1 + np.exp(-logits)), atol=1e-6)


def test_classification_gives_probabilities(tiny_model_dir: Path) -> None:
    model = CrossEncoder.from_pretrained(
        tiny_model_dir, num_labels=3, label_names=["contradiction", "entailment", "neutral"], device="cpu"
    )
    probabilities = model.predict(PAIRS)
    assert probabilities.shape == (3, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)
    assert model.label_names == ["contradiction", "entailment", "neutral"]
    with pytest.raises(ValueError, match="one-output"):
        model.rerank("q", ["a", "b"])


def test_forward_has_gradients_for_a_trainer(regression: CrossEncoder) -> None:
    regression.train()
    features = regression.collate(PAIRS[:2])
    assert set(features) == {"input_ids", "attention_mask", "token_type_ids"}
    logits = regression(features)  # (batch, num_labels)
    assert logits.shape == (2, 1)
    torch.nn.functional.mse_loss(torch.sigmoid(logits[:, 0]), torch.tensor([0.8, 0.1])).backward()
    assert regression.model.classifier.weight.grad is not None


def test_rerank_orders_by_score(regression: CrossEncoder) -> None:
    candidates = ["a man plays music", "a cat eats food", "the dog runs", "rain"]
    ranked = regression.rerank("a man plays guitar", candidates, top_k=3)
    scores = regression.predict([("a man plays guitar", c) for c in candidates])
    assert [r.corpus_id for r in ranked] == np.argsort(-scores, kind="stable")[:3].tolist()
    assert ranked[0].text == candidates[ranked[0].corpus_id]
    with pytest.raises(ValueError, match="top_k"):
        regression.rerank("q", candidates, top_k=0)


def test_save_load_round_trip(regression: CrossEncoder, tmp_path: Path) -> None:
    regression.save(tmp_path / "ce")
    files = {p.name for p in (tmp_path / "ce").iterdir()}
    assert {"config.json", "model.safetensors", CONFIG_FILE, "tokenizer.json"} <= files
    assert not any(name.endswith((".bin", ".pt", ".pkl")) for name in files)
    loaded = CrossEncoder.from_pretrained(tmp_path / "ce", device="cpu", precision="float32")
    assert loaded.num_labels == 1
    np.testing.assert_allclose(loaded.predict(PAIRS), regression.predict(PAIRS), atol=1e-6)
    assert json.loads((tmp_path / "ce" / CONFIG_FILE).read_text())["head"] == "regression"
    assert [p.name for p in tmp_path.iterdir()] == ["ce"]


def test_sentence_transformers_loads_the_saved_model(regression: CrossEncoder, tmp_path: Path) -> None:
    st = pytest.importorskip("sentence_transformers")
    regression.save(tmp_path / "ce")
    theirs = st.CrossEncoder(str(tmp_path / "ce"), device="cpu")
    np.testing.assert_allclose(theirs.predict(PAIRS), regression.predict(PAIRS), atol=1e-5)


def test_bad_input(regression: CrossEncoder, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"pairs\[1\]"):
        regression.predict([("a", "b"), ("only one",)])  # type: ignore[list-item]
    with pytest.raises(ModelLoadError, match="config.json"):
        CrossEncoder.from_pretrained(tmp_path)
    assert regression.predict([]).shape == (0,)


def test_another_label_count_than_the_saved_heads_is_refused(
    regression: CrossEncoder, tmp_path: Path
) -> None:
    regression.save(tmp_path / "ce")  # as sentence-transformers: no silent new head over a trained one
    with pytest.raises(ModelLoadError, match=r"the saved head has 1 outputs, and num_labels=3"):
        CrossEncoder.from_pretrained(tmp_path / "ce", num_labels=3, device="cpu")


@pytest.mark.parametrize("pack", [False, True], ids=["padded", "packed"])
def test_tokens_logits_are_the_logits_of_the_tokenized_pairs(regression: CrossEncoder, pack: bool) -> None:
    """The engine step after tokenizing (what the server runs for merged /rerank requests), with
    the server's batching options: the same logits as ``logits(pairs)``."""
    from sbert.inference.runner import RunOptions

    pairs = [
        ("a query", "a man plays the guitar"),
        ("q", "rain"),
        ("another query", "the dog runs in the park"),
    ]
    options = RunOptions(batch_size=2, max_tokens=40, batch_cost_tokens=24, pack=pack)
    logits = regression.tokens_logits(regression.tokenize(pairs), options)
    assert logits.shape == (3, 1) and logits.dtype == torch.float32
    torch.testing.assert_close(logits, regression.logits(pairs), atol=1e-6, rtol=0)
