"""``do_lower_case: true`` lowers inside the tokenizer, as sentence-transformers 6.2 does (its
Transformer puts a Lowercase normalizer first): a literal ``[SEP]`` stays the special token and a
final capital sigma becomes ``σ``, where lowering the text first (sentence-transformers ≤ 5) gave
``[sep]`` and ``ς`` (sbert.modules.lowercase)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sbert import SentenceEncoder

st = pytest.importorskip("sentence_transformers")

TEXTS = ["a man plays guitar [SEP] the dog runs", "The Cat eats [CLS] food", "ΚΑΛΟΣ cat", "rain"]


def _with_sigma(tokenizer_json: Path) -> None:
    """The tiny vocabulary with Greek letters in place of punctuation the texts do not use (same
    ids, so the embedding table fits): lowering Σ one way or the other then shows."""
    data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    for greek, unused in zip("σςκαλο", "~^|`{}", strict=True):
        vocab[greek] = vocab.pop(unused)
        vocab[f"##{greek}"] = vocab.pop(f"##{unused}")
    tokenizer_json.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture()
def lowered_model(tiny_model_dir: Path, tmp_path: Path) -> Path:
    """The tiny BERT in sentence-transformers' layout with ``do_lower_case: true``, and a normalizer
    that does not lowercase by itself (a cased model used uncased)."""
    plain = Path(shutil.copytree(tiny_model_dir, tmp_path / "plain"))
    data = json.loads((plain / "tokenizer.json").read_text(encoding="utf-8"))
    data["normalizer"]["lowercase"] = False
    (plain / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    config = json.loads((plain / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["do_lower_case"] = False  # transformers 5 builds a BERT tokenizer's normalizer from it
    (plain / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    _with_sigma(plain / "tokenizer.json")
    folder = tmp_path / "st"
    st.SentenceTransformer(str(plain), device="cpu").save(str(folder))
    settings = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    settings["do_lower_case"] = True
    (folder / "sentence_bert_config.json").write_text(json.dumps(settings), encoding="utf-8")
    return folder


def test_token_ids_match_sentence_transformers(lowered_model: Path) -> None:
    theirs = st.SentenceTransformer(str(lowered_model), device="cpu")
    ours = SentenceEncoder.from_pretrained(lowered_model, device="cpu", precision="float32", backend="torch")
    assert ours.transformer.do_lower_case
    expected = theirs.tokenize(TEXTS)["input_ids"]
    for row, text in enumerate(TEXTS):
        wanted = [int(i) for i in expected[row] if i != theirs.tokenizer.pad_token_id]
        assert list(ours.transformer.tokenize([text]).ids[0]) == wanted, text


@pytest.mark.parametrize("backend", ["torch", "auto"])
def test_vectors_match_sentence_transformers(lowered_model: Path, backend: str) -> None:
    theirs = st.SentenceTransformer(str(lowered_model), device="cpu").encode(TEXTS)
    ours = SentenceEncoder.from_pretrained(lowered_model, device="cpu", precision="float32", backend=backend)
    np.testing.assert_allclose(ours.encode(TEXTS), theirs, atol=1e-5)


def test_lowering_can_be_switched_off_again(lowered_model: Path) -> None:
    model = SentenceEncoder.from_pretrained(lowered_model, device="cpu", precision="float32", backend="torch")
    lowered = model.transformer.tokenize(["The Cat"]).ids[0]
    model.transformer.do_lower_case = False
    assert model.transformer.tokenize(["The Cat"]).ids[0] != lowered  # 'T', 'C' are not in the vocabulary
    model.transformer.do_lower_case = True
    assert model.transformer.tokenize(["The Cat"]).ids[0] == lowered


def test_a_saved_model_lowers_once(lowered_model: Path, tmp_path: Path) -> None:
    model = SentenceEncoder.from_pretrained(lowered_model, device="cpu", precision="float32", backend="torch")
    model.save(tmp_path / "again")
    again = SentenceEncoder.from_pretrained(
        tmp_path / "again", device="cpu", precision="float32", backend="torch"
    )
    assert again.transformer.do_lower_case
    np.testing.assert_array_equal(again.encode(TEXTS), model.encode(TEXTS))
    theirs = st.SentenceTransformer(str(tmp_path / "again"), device="cpu").encode(TEXTS)
    np.testing.assert_allclose(again.encode(TEXTS), theirs, atol=1e-5)
