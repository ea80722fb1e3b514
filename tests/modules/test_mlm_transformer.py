"""MLMTransformer: the head over the body is the model's logits (BERT, RoBERTa, DistilBERT), the
fill-mask Transformer and 5.x's MLMTransformer type both load, and a folder without its head is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tests.conftest import build_tiny_bert
from tests.sparse.conftest import build_tiny_mlm
from transformers import (
    BertConfig,
    DistilBertConfig,
    DistilBertForMaskedLM,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaForMaskedLM,
)

from sbert.modules import MLMTransformer, Transformer
from sbert.modules.module import load_module
from sbert.modules.splade_pooling import SpladePooling


@pytest.fixture(scope="module")
def tiny_mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_mlm(tmp_path_factory.mktemp("mlm"))


def _tokenizer(folder: Path) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast.from_pretrained(build_tiny_bert(folder))


def _small(config_class: type, **extra: int) -> object:
    return config_class(vocab_size=189, max_position_embeddings=64, **extra)


@pytest.mark.parametrize(
    "build",
    [
        lambda: RobertaForMaskedLM(
            _small(
                RobertaConfig,
                hidden_size=32,
                num_hidden_layers=1,
                num_attention_heads=2,
                intermediate_size=64,
            )
        ),
        lambda: DistilBertForMaskedLM(_small(DistilBertConfig, dim=32, n_layers=1, n_heads=2, hidden_dim=64)),
    ],
    ids=["roberta", "distilbert"],
)
def test_head_over_body_is_the_logits(build, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = build().eval()
    mlm = MLMTransformer(model, _tokenizer(tmp_path / "tok"), max_seq_length=32)
    features = mlm.collate([[2, 7, 9, 3], [2, 5, 3]])
    inputs = {k: v for k, v in features.items() if k in ("input_ids", "attention_mask")}
    with torch.no_grad():
        expected = model(**inputs).logits
        torch.testing.assert_close(mlm(features), expected, atol=1e-6, rtol=0)
        torch.testing.assert_close(
            mlm.head(mlm.body(**inputs).last_hidden_state), expected, atol=1e-6, rtol=0
        )
    assert mlm.dim == 189 and mlm.hidden_dim == 32


def test_bert_fill_mask_folder(tiny_mlm_dir: Path, tmp_path: Path) -> None:
    from transformers import BertForMaskedLM

    mlm = Transformer.load(tiny_mlm_dir)  # a plain folder: no task, so the dense Transformer
    assert type(mlm) is Transformer
    folder = tmp_path / "mlm"
    MLMTransformer.load_pretrained(tiny_mlm_dir).save(folder)
    settings = json.loads((folder / "sentence_bert_config.json").read_text())
    assert (
        settings["transformer_task"] == "fill-mask" and settings["module_output_name"] == "token_embeddings"
    )
    loaded = Transformer.load(folder)  # sentence-transformers 6's one Transformer type: the task decides
    assert isinstance(loaded, MLMTransformer)
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_dir).eval()
    features = loaded.collate([[2, 40, 41, 3]])
    with torch.no_grad():
        torch.testing.assert_close(loaded(features), reference(**features).logits, atol=1e-6, rtol=0)


def test_legacy_mlm_transformer_type(tiny_mlm_dir: Path, tmp_path: Path) -> None:
    """sentence-transformers 5.x: MLMTransformer and SpladePooling's word_embedding_dimension."""
    loaded = load_module("sentence_transformers.sparse_encoder.models.MLMTransformer", tiny_mlm_dir, tmp_path)
    assert isinstance(loaded, MLMTransformer) and loaded.written_type.endswith("transformer.Transformer")
    (tmp_path / "config.json").write_text(
        json.dumps({"pooling_strategy": "sum", "word_embedding_dimension": 189})
    )
    pooling = load_module("sentence_transformers.sparse_encoder.models.SpladePooling", tmp_path, tmp_path)
    assert (
        isinstance(pooling, SpladePooling)
        and pooling.embedding_dimension == 189
        and pooling.mode == "splade_sum"
    )


def test_unknown_head_is_refused(tmp_path: Path) -> None:
    from transformers import BertModel

    with pytest.raises(OSError, match="has a head sbert does not run"):
        MLMTransformer(BertModel(BertConfig(vocab_size=189, hidden_size=8, num_hidden_layers=1, num_attention_heads=2)),
                       _tokenizer(tmp_path / "tok"))  # fmt: skip
