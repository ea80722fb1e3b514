"""A model folder is checked before it is used: each broken folder is refused with a message naming
the file, from the API and from ``sbert encode``; what sentence-transformers loads the same way
(weights the config leaves unused, no pooler) loads with the same vectors, and says so."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer, models
from transformers import BertConfig, BertModel

from sbert import ModelLoadError, SentenceEncoder
from sbert.base.inputs import check_max_seq_length
from sbert.modules.checks import check_finite_table, check_loading_info, position_limit
from sbert.static import StaticEncoder

SRC = Path(__file__).resolve().parents[2] / "src"
SENTENCES = ["a man plays the guitar", "the dog runs in the park"]


def _copy(src: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(src, tmp_path / "model"))


def _edit_json(file: Path, **changes: object) -> None:
    file.write_text(json.dumps({**json.loads(file.read_text()), **changes}), encoding="utf-8")


def _hf_with_config(tiny: Path, tmp_path: Path, **changes: object) -> Path:
    """The tiny BERT with ``config.json`` edited, its weights left as saved."""
    folder = _copy(tiny, tmp_path)
    _edit_json(folder / "config.json", **changes)
    return folder


def _st_with(tiny: Path, tmp_path: Path, file: str, **changes: object) -> Path:
    """The tiny BERT saved by sentence-transformers, with one of its JSON files edited."""
    folder = tmp_path / "model"
    SentenceTransformer(str(tiny), device="cpu").save(str(folder))
    _edit_json(folder / file, **changes)
    return folder


def _no_tokenizer(tiny: Path, tmp_path: Path) -> Path:
    folder = _copy(tiny, tmp_path)
    (folder / "tokenizer.json").unlink()  # tokenizer_config.json alone: 5 special tokens
    return folder


def _cut_short(name: str) -> Callable[[Path, Path], Path]:
    """The tiny BERT with one tokenizer file cut to half its bytes (a download stopped midway)."""

    def build(tiny: Path, tmp_path: Path) -> Path:
        folder = _copy(tiny, tmp_path)
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: len(data) // 2])
        return folder

    return build


def _small_table(tiny: Path, tmp_path: Path) -> Path:
    """A BERT of 100 token vectors beside the tiny tokenizer's 189 tokens."""
    folder = _copy(tiny, tmp_path)
    config = BertConfig.from_pretrained(folder)
    config.vocab_size = 100
    BertModel(config).save_pretrained(folder)
    return folder


def _static_with(tiny: Path, tmp_path: Path, value: float) -> Path:
    tokenizer = Tokenizer.from_file(str(tiny / "tokenizer.json"))
    table = torch.randn(tokenizer.get_vocab_size(), 8, generator=torch.Generator().manual_seed(0))
    table[tokenizer.token_to_id("guitar")] = value
    StaticEncoder(tokenizer, table, name="broken").save(tmp_path / "model")
    return tmp_path / "model"


# Each broken folder, and what the refusal must name: (builder, file named ("": the folder), the reason).
REFUSED: dict[str, tuple[Callable[[Path, Path], Path], str, str]] = {
    "no tokenizer file": (_no_tokenizer, "", "tokenizer.json"),
    "tokenizer past the table": (
        _small_table,
        "",
        "token ids up to 188, but the embedding table has 100 rows",
    ),
    "config asks for more layers": (
        lambda t, p: _hf_with_config(t, p, num_hidden_layers=3),
        "model.safetensors",
        r"encoder\.layer\.2\.\* \(16 weights\)",
    ),
    "config of another vocabulary size": (
        lambda t, p: _hf_with_config(t, p, vocab_size=500),
        "model.safetensors",
        r"embeddings.word_embeddings.weight \(189, 32\) \(config.json: \(500, 32\)\)",
    ),
    "config whose hidden size builds no model": (
        lambda t, p: _hf_with_config(t, p, hidden_size=999),
        "config.json",
        r"hidden size \(999\) is not a multiple of the number of attention heads \(2\); the weights hold "
        r"embeddings\.word_embeddings\.weight of shape \[189, 32\]: hidden size 32, where config\.json says 999",
    ),
    "tokenizer.json cut short": (
        _cut_short("tokenizer.json"),
        "tokenizer.json",
        r"not valid JSON at line \d+, column \d+: .* \(the file ends there: cut short\?\)",
    ),
    "tokenizer_config.json cut short": (
        _cut_short("tokenizer_config.json"),
        "tokenizer_config.json",
        r"not valid JSON at line \d+, column \d+",
    ),
    "static table with NaN": (lambda t, p: _static_with(t, p, float("nan")), "model.safetensors", "'guitar'"),
    "static table with infinity": (
        lambda t, p: _static_with(t, p, float("inf")),
        "model.safetensors",
        "'guitar'",
    ),
    "negative max_seq_length": (
        lambda t, p: _st_with(t, p, "sentence_bert_config.json", max_seq_length=-5),
        "sentence_bert_config.json",
        "max_seq_length -5 is not a whole number",
    ),
    "max_seq_length past the positions": (
        lambda t, p: _st_with(t, p, "sentence_bert_config.json", max_seq_length=1000),
        "sentence_bert_config.json",
        "max_seq_length 1000 is more than the 64 positions",
    ),
    "do_lower_case as a string": (
        lambda t, p: _st_with(t, p, "sentence_bert_config.json", do_lower_case="false"),
        "sentence_bert_config.json",
        "do_lower_case is 'false'",
    ),
    "pooling flag as a string": (
        lambda t, p: _st_with(t, p, "1_Pooling/config.json", pooling_mode_cls_token="false"),
        "1_Pooling/config.json",
        "pooling_mode_cls_token is 'false'",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_broken_folder_is_refused_naming_the_file(case: str, tiny_model_dir: Path, tmp_path: Path) -> None:
    build, file, reason = REFUSED[case]
    folder = build(tiny_model_dir, tmp_path)
    with pytest.raises(ModelLoadError, match=reason) as raised:
        SentenceEncoder.from_pretrained(folder, device="cpu", precision="float32", backend="torch")
    assert str(raised.value).startswith(f"{folder / file}: ")


def _encode_cli(folder: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    sentences = tmp_path / "in.txt"
    sentences.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "sbert", "encode", str(sentences), "-m", str(folder)]
    flags = ["-o", str(tmp_path / "out.npy"), "--precision", "float32", "--backend", "torch", "--no-progress"]
    environment = {**os.environ, "PYTHONPATH": str(SRC), "SBERT_CACHE_DIR": "off"}
    return subprocess.run([*command, *flags], capture_output=True, text=True, env=environment, timeout=300)


@pytest.mark.parametrize("case", REFUSED)
def test_sbert_encode_refuses_the_broken_folder(case: str, tiny_model_dir: Path, tmp_path: Path) -> None:
    build, file, reason = REFUSED[case]
    folder = build(tiny_model_dir, tmp_path)
    done = _encode_cli(folder, tmp_path)
    assert done.returncode == 1, done.stderr
    assert f"sbert encode: error: {folder / file}: " in done.stderr and re.search(reason, done.stderr)
    assert "Traceback" not in done.stderr and not (tmp_path / "out.npy").exists()


def test_sbert_encode_names_weights_the_config_leaves_unused(tiny_model_dir: Path, tmp_path: Path) -> None:
    folder = _hf_with_config(tiny_model_dir, tmp_path, num_hidden_layers=1)
    done = _encode_cli(folder, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{folder / 'model.safetensors'}: 16 weights in the file are not used" in done.stderr
    assert "encoder.layer.1.* (16 weights)" in done.stderr


def _sentence_transformers_vectors(folder: Path) -> np.ndarray:
    return SentenceTransformer(str(folder), device="cpu").encode(SENTENCES)


def test_unused_weights_warn_and_give_sentence_transformers_vectors(
    tiny_model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _hf_with_config(tiny_model_dir, tmp_path, num_hidden_layers=1)
    with caplog.at_level(logging.WARNING, logger="sbert"):
        model = SentenceEncoder.from_pretrained(folder, device="cpu", precision="float32", backend="torch")
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert (
        f"{folder / 'model.safetensors'}: 16 weights" in caplog.text
        and "encoder.layer.1.* (16 weights)" in caplog.text
    )
    np.testing.assert_allclose(model.encode(SENTENCES), _sentence_transformers_vectors(folder), atol=1e-5)


def test_missing_pooler_loads_with_sentence_transformers_vectors(
    tiny_model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A checkpoint saved from a masked-LM model has no pooler; sbert's vectors never read it.
    folder = _copy(tiny_model_dir, tmp_path)
    state = load_file(str(folder / "model.safetensors"))
    save_file(
        {k: v for k, v in state.items() if not k.startswith("pooler.")}, str(folder / "model.safetensors")
    )
    with caplog.at_level(logging.INFO, logger="sbert"):
        model = SentenceEncoder.from_pretrained(folder, device="cpu", precision="float32", backend="torch")
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert "pooler.dense.weight" in caplog.text
    np.testing.assert_allclose(model.encode(SENTENCES), _sentence_transformers_vectors(folder), atol=1e-5)


def test_good_folders_load_without_a_message(
    tiny_model_dir: Path, tiny_static_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    saved = tmp_path / "saved"
    SentenceTransformer(str(tiny_model_dir), device="cpu").save(str(saved))
    with caplog.at_level(logging.INFO, logger="sbert"):
        for folder in (None, tiny_model_dir, saved, tiny_static_dir):  # None: the bundled model
            SentenceEncoder.from_pretrained(folder, device="cpu", precision="float32", backend="torch")
    assert not [r for r in caplog.records if r.pathname.endswith("model_checks.py")]


def test_max_seq_length_argument_is_checked(tiny_model_dir: Path, tiny_static_dir: Path) -> None:
    for folder in (tiny_model_dir, tiny_static_dir):
        with pytest.raises(ModelLoadError, match=re.escape(f"{folder}: max_seq_length -5 is not")):
            SentenceEncoder.from_pretrained(folder, max_seq_length=-5)
    with pytest.raises(ModelLoadError, match="max_seq_length 65 is more than the 64 positions"):
        SentenceEncoder.from_pretrained(tiny_model_dir, max_seq_length=65)
    assert SentenceEncoder.from_pretrained(tiny_model_dir, max_seq_length=64).max_seq_length == 64


@pytest.mark.parametrize("value", [0, True, 12.0, "128"])
def test_max_seq_length_is_a_whole_number_of_at_least_one(value: object) -> None:
    with pytest.raises(ModelLoadError, match=f"here: max_seq_length {value!r} is not a whole number"):
        check_max_seq_length(value, None, "here")


def test_position_limit_follows_the_model_type() -> None:
    assert position_limit({"max_position_embeddings": 514, "model_type": "roberta"}) == 512
    assert position_limit(BertConfig(max_position_embeddings=64)) == 64
    assert position_limit({"model_type": "t5"}) is None  # relative positions: no table to overrun
    assert position_limit({"max_position_embeddings": 128, "rope_theta": 1e4}) is None  # rotary


def test_loading_info_lists_a_few_names_and_counts_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    unused = {f"cls.predictions.{i}.weight" for i in range(7)}
    with caplog.at_level(logging.WARNING, logger="sbert"):
        check_loading_info(Path("m.safetensors"), {"missing_keys": set(), "unexpected_keys": unused})
    assert "m.safetensors: 7 weights" in caplog.text and "cls.predictions.4.weight and 2 more" in caplog.text
    with pytest.raises(ModelLoadError, match=r"2 weights .* not in the file \(a.weight, b.weight\)"):
        check_loading_info(
            Path("m.safetensors"), {"missing_keys": {"b.weight", "a.weight", "pooler.dense.bias"}}
        )


def test_finite_table_check_names_each_bad_row_and_passes_a_row_whose_sum_overflows() -> None:
    tokenizer = Tokenizer(models.WordLevel({f"t{i}": i for i in range(6)}, unk_token="t0"))
    table = torch.zeros(6, 4)
    table[1] = 3e38  # finite, though its sum overflows to inf
    check_finite_table(table, Path("m.safetensors"), tokenizer)
    table[3, 0], table[5, 2] = float("-inf"), float("nan")
    with pytest.raises(
        ModelLoadError, match=r"m.safetensors: 2 token vectors .*: row 3 \('t3'\), row 5 \('t5'\);"
    ):
        check_finite_table(table, Path("m.safetensors"), tokenizer)
