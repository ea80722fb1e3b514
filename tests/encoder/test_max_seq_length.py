"""max_seq_length is checked once where it enters, with one error (MaxSeqLengthError: a ModelLoadError
and a ValueError): an argument, a setter or a saved config; 0 and negatives are refused everywhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer
from transformers import BertConfig, BertForSequenceClassification

from sbert import CrossEncoder, ModelLoadError, SentenceEncoder
from sbert.base.errors import MaxSeqLengthError
from sbert.static import StaticEncoder

BAD = [0, -1]


def _classifier(tiny_model_dir: Path, path: Path) -> Path:
    """A random one-label BERT classifier on the tiny BERT's config and tokenizer."""
    torch.manual_seed(0)
    BertForSequenceClassification(BertConfig.from_pretrained(tiny_model_dir, num_labels=1)).save_pretrained(
        path
    )
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (tiny_model_dir / name).is_file():
            shutil.copy(tiny_model_dir / name, path / name)
    return path


@pytest.fixture(scope="module")
def st_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny BERT saved by sentence-transformers (sentence_bert_config.json's max_seq_length)."""
    path = tmp_path_factory.mktemp("st") / "model"
    SentenceTransformer(str(tiny_model_dir), device="cpu").save(str(path))
    return path


def test_the_error_is_a_model_load_error_and_a_value_error() -> None:
    assert issubclass(MaxSeqLengthError, ModelLoadError) and issubclass(MaxSeqLengthError, ValueError)


@pytest.mark.parametrize("value", BAD)
def test_from_pretrained_refuses_it_for_every_kind_of_folder(
    value: int, tiny_model_dir: Path, st_dir: Path, tiny_static_dir: Path
) -> None:
    # 0 went unnoticed for sentence-transformers and static folders (`max_seq_length or saved`).
    for folder in (tiny_model_dir, st_dir, tiny_static_dir):
        with pytest.raises(
            MaxSeqLengthError, match=f"{folder}: max_seq_length {value} is not a whole number"
        ):
            SentenceEncoder.from_pretrained(folder, device="cpu", max_seq_length=value)


@pytest.mark.parametrize("value", [*BAD, None, 1.5, True])
def test_the_setter_refuses_it(tiny_encoder: SentenceEncoder, value: object) -> None:
    before = tiny_encoder.max_seq_length
    with pytest.raises(
        MaxSeqLengthError, match=f"max_seq_length {value!r} is not a whole number of at least 1"
    ):
        tiny_encoder.max_seq_length = value  # type: ignore[assignment]
    assert tiny_encoder.max_seq_length == before
    tiny_encoder.max_seq_length = 7
    assert tiny_encoder.max_seq_length == 7


@pytest.mark.parametrize("value", BAD)
def test_a_saved_config_refuses_it(value: int, st_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(st_dir, folder)
    config = folder / "sentence_bert_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "max_seq_length": value}))
    with pytest.raises(MaxSeqLengthError, match=f"max_seq_length {value} is not a whole number"):
        SentenceEncoder.from_pretrained(folder, device="cpu")


@pytest.mark.parametrize("value", BAD)
def test_a_static_encoder_refuses_it(value: int, tiny_model_dir: Path) -> None:
    tokenizer = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    table = [[0.0, 1.0]] * tokenizer.get_vocab_size()
    with pytest.raises(MaxSeqLengthError, match=f"max_seq_length {value} is not a whole number"):
        StaticEncoder(tokenizer, table, max_seq_length=value)  # type: ignore[arg-type]
    assert StaticEncoder(tokenizer, table, max_seq_length=3).max_seq_length == 3  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [*BAD, 2])
def test_a_cross_encoder_refuses_it_below_three(value: int, tiny_model_dir: Path, tmp_path: Path) -> None:
    folder = _classifier(tiny_model_dir, tmp_path / "ce")
    for keyword in ("max_seq_length", "max_length"):  # 0 went unnoticed (`max_length or ...`)
        with pytest.raises(
            MaxSeqLengthError, match=f"max_seq_length {value} is not a whole number of at least 3"
        ):
            CrossEncoder(folder, device="cpu", **{keyword: value})
    model = CrossEncoder(folder, device="cpu", max_length=5)
    assert model.max_seq_length == 5
    with pytest.raises(MaxSeqLengthError, match="at least 3"):
        model.max_seq_length = value
    model.save(tmp_path / "saved")
    config = tmp_path / "saved" / "sbert_cross_encoder.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "max_seq_length": value}))
    with pytest.raises(MaxSeqLengthError, match=f"saved: max_seq_length {value} is not"):
        CrossEncoder(tmp_path / "saved", device="cpu")


@pytest.mark.parametrize("value", BAD)
def test_the_modules_refuse_it(value: int, tiny_model_dir: Path) -> None:
    """The modules themselves, built by hand: 0 is refused, not read as "the default" or "no limit"."""
    from transformers import AutoModel, AutoTokenizer

    from sbert.modules import StaticEmbedding, Transformer

    tokenizer = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    table = torch.zeros(tokenizer.get_vocab_size(), 4)
    with pytest.raises(MaxSeqLengthError, match="StaticEmbedding"):
        StaticEmbedding(tokenizer, table, max_seq_length=value)
    static = StaticEmbedding(tokenizer, table)
    with pytest.raises(MaxSeqLengthError, match="StaticEmbedding.max_seq_length"):
        static.max_seq_length = value
    static.max_seq_length = None  # no limit, as before
    model, hf_tokenizer = (
        AutoModel.from_pretrained(tiny_model_dir),
        AutoTokenizer.from_pretrained(tiny_model_dir),
    )
    with pytest.raises(MaxSeqLengthError, match="Transformer"):
        Transformer(model, hf_tokenizer, max_seq_length=value)
    with pytest.raises(MaxSeqLengthError):
        Transformer.load(tiny_model_dir, max_seq_length=value)
