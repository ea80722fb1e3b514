"""StaticEncoder against sentence-transformers' StaticEmbedding, and the encode() input rules."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer

from sbert import SentenceEncoder
from sbert.base.errors import ModelLoadError
from sbert.embeddings.identity import check_same_model, model_identity
from sbert.static import StaticEncoder

SENTENCES = ["A man plays a guitar.", "", "the cat is good", "Ünïcode café!", "no " * 80]


def test_sentence_transformers_loads_ours_and_gives_the_same_vectors(static_dir: Path) -> None:
    st = pytest.importorskip("sentence_transformers")
    ours = SentenceEncoder.from_pretrained(static_dir)
    assert isinstance(ours, StaticEncoder)
    theirs = st.SentenceTransformer(str(static_dir), device="cpu")
    np.testing.assert_allclose(ours.encode(SENTENCES), theirs.encode(SENTENCES), atol=1e-6)


def test_we_load_a_sentence_transformers_static_model(tiny_model_dir: Path, tmp_path: Path) -> None:
    st = pytest.importorskip("sentence_transformers")
    from sentence_transformers.sentence_transformer.modules import Normalize, StaticEmbedding

    tokenizer = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(5)  # ST truncates as the tokenizer says; so must we
    embedding = StaticEmbedding(
        tokenizer, embedding_weights=np.random.default_rng(1).normal(size=(tokenizer.get_vocab_size(), 6))
    )
    built = st.SentenceTransformer(modules=[embedding, Normalize()], device="cpu")
    built.save(str(tmp_path / "st-static"))
    ours = SentenceEncoder.from_pretrained(tmp_path / "st-static")
    assert ours.max_seq_length == 5 and ours.dim == 6
    np.testing.assert_allclose(ours.encode(SENTENCES), built.encode(SENTENCES), atol=1e-6)


def test_the_vector_is_the_mean_of_the_token_rows(static_model: StaticEncoder) -> None:
    ids = static_model.token_ids(["the cat is good"]).ids[0]
    expected = static_model.input_module.embedding.weight[ids].mean(0).detach().numpy()
    np.testing.assert_allclose(static_model.encode("the cat is good"), expected, rtol=1e-6)
    assert not static_model.encode([""]).any()  # an empty string: the zero vector, no error
    assert static_model.encode([]).shape == (0,)  # as sentence-transformers


def test_truncation_is_reported(static_model: StaticEncoder, caplog: pytest.LogCaptureFixture) -> None:
    static_model.input_module.limit = 3
    with caplog.at_level(logging.WARNING, logger="sbert"):
        vectors = static_model.encode(["a b c d e", "a b"])
    assert "1 of 2 inputs were longer than max_seq_length=3" in caplog.text
    np.testing.assert_allclose(vectors[0], static_model.encode("a b c"), rtol=1e-6)


def test_bad_items_are_named(static_model: StaticEncoder) -> None:
    with pytest.raises(TypeError, match=r"sentences\[1\] is int"):
        static_model.encode(["fine", 3])
    with pytest.raises(ValueError, match="float32"):
        static_model.encode(["fine"], compute_precision="int8")
    assert static_model.encode(["bad \ud800 surrogate"]).shape == (1, 8)


def test_identity_tells_static_tables_apart(static_model: StaticEncoder, static_dir: Path) -> None:
    loaded = SentenceEncoder.from_pretrained(static_dir)
    check_same_model(model_identity(static_model), loaded, "store")  # same weights: accepted
    with torch.no_grad():
        loaded.input_module.embedding.weight[5] += 1
    with pytest.raises(ModelLoadError, match="weights differ"):
        check_same_model(model_identity(static_model), loaded, "store")


def test_a_pooling_other_than_mean_is_refused(static_dir: Path) -> None:
    with pytest.raises(ModelLoadError, match="pooling 'cls'"):
        SentenceEncoder.from_pretrained(static_dir, pooling="cls")


def test_a_table_smaller_than_the_vocabulary_is_refused(static_dir: Path) -> None:
    from safetensors.torch import save_file

    save_file({"embedding.weight": torch.zeros(3, 8)}, str(static_dir / "model.safetensors"))
    with pytest.raises(ModelLoadError, match="3 token vectors for a vocabulary"):
        SentenceEncoder.from_pretrained(static_dir)


def test_the_ascii_shortcut_gives_the_full_tokenizers_ids_in_order(static_model: StaticEncoder) -> None:
    assert static_model.input_module.ascii_tokenizer is not None  # a BERT tokenizer: the shortcut is taken
    texts = [
        "A Man Plays!",
        "Ünïcode café",
        "tab\there",
        "ctrl\x01char",
        "bad \ud800 surrogate",
        "",
        "中文 text",
        "Plain ASCII, again.",
        "wide\u3000space",
    ]
    texts = texts * 3
    full = [e.ids for e in static_model.input_module._full_encodings(texts)]
    assert [e.ids for e in static_model.input_module._encodings(texts)] == full
    assert [e.ids for e in static_model.input_module._encodings(texts[:1] + texts[7:8])] == [full[0], full[7]]
    assert [e.ids for e in static_model.input_module._encodings(texts[1:5])] == full[1:5]  # none plain


def test_a_tokenizer_without_bert_normalizer_takes_no_shortcut(tiny_model_dir: Path) -> None:
    from tokenizers import normalizers

    tokenizer = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    tokenizer.normalizer = normalizers.NFKC()
    model = StaticEncoder(tokenizer, torch.zeros(tokenizer.get_vocab_size(), 2))
    assert model.input_module.ascii_tokenizer is None
    assert model.encode(["a cat"]).shape == (1, 2)
