"""The compatibility matrix: tiny random models of today's architectures, saved by sentence-transformers
itself, give sentence-transformers' vectors in sbert on PyTorch and on the default backend, and after a
save in either direction. sentence-transformers is the oracle throughout."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
from tests.conftest import PROMPTS, WORDS

from sbert import SentenceEncoder

SENTENCES = [
    "a man plays the guitar",
    "rain",
    "",
    " ".join(WORDS * 3),  # past max_seq_length: cut the same way in both
    "the dog runs in the park and the cat sleeps in the sun",
]
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 48}
# architecture → (config class, its size arguments); each is built on the tiny BERT's vocabulary.
ARCHITECTURES: dict[str, tuple[str, dict[str, Any]]] = {
    "bert": ("BertConfig", {**SMALL, "max_position_embeddings": 128}),
    "roberta": ("RobertaConfig", {**SMALL, "max_position_embeddings": 130}),
    "xlm-roberta": ("XLMRobertaConfig", {**SMALL, "max_position_embeddings": 130}),
    "mpnet": ("MPNetConfig", {**SMALL, "max_position_embeddings": 130}),
    "distilbert": ("DistilBertConfig", {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 48}),
    "electra": ("ElectraConfig", {**SMALL, "embedding_size": 16, "max_position_embeddings": 128}),
    "deberta-v2": ("DebertaV2Config", {**SMALL, "max_position_embeddings": 128, "relative_attention": True}),
    "modernbert": ("ModernBertConfig", {**SMALL, "local_attention": 16, "max_position_embeddings": 128}),
    "qwen2": ("Qwen2Config", {**SMALL, "num_key_value_heads": 1, "max_position_embeddings": 128}),
    # sentence-t5 / GTR: sentence-transformers runs only the encoder of the saved seq2seq model.
    "t5": ("T5Config", {"d_model": 32, "num_layers": 2, "num_heads": 2, "d_ff": 64, "d_kv": 16}),
}
DECODERS = {"qwen2"}
# Where sbert's default backend does not run OpenVINO for an architecture, and why (the README's table).
TORCH_ON_AUTO = {"modernbert": "the OpenVINO padded graph gave NaN or inf"}


def build(architecture: str, tiny_model_dir: Path, path: Path) -> Path:
    """A random model of ``architecture`` with the tiny BERT's tokenizer, saved as Hugging Face does."""
    config_class, sizes = ARCHITECTURES[architecture]
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    special = {"pad_token_id": tokenizer.pad_token_id}
    if architecture in DECODERS:
        special |= {"bos_token_id": tokenizer.cls_token_id, "eos_token_id": tokenizer.sep_token_id}
    if architecture == "modernbert":
        special |= {
            "cls_token_id": tokenizer.cls_token_id,
            "sep_token_id": tokenizer.sep_token_id,
            "bos_token_id": tokenizer.cls_token_id,
            "eos_token_id": tokenizer.sep_token_id,
        }
    config = getattr(transformers, config_class)(vocab_size=tokenizer.vocab_size, **sizes, **special)
    torch.manual_seed(0)
    transformers.AutoModel.from_config(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def hf_dirs(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("architectures")
    return {name: build(name, tiny_model_dir, root / name) for name in ARCHITECTURES}


def st_model(
    hf_dir: Path, pooling: str | tuple[str, ...], dense: bool = False, **options: Any
) -> SentenceTransformer:
    transformer = Transformer(str(hf_dir), max_seq_length=48)
    modules: list[Any] = [transformer, Pooling(32, pooling_mode=pooling)]
    if dense:
        torch.manual_seed(1)
        modules += [Dense(modules[1].get_sentence_embedding_dimension(), 16), Normalize()]
    return SentenceTransformer(modules=modules, device="cpu", **options)


def assert_same(ours: SentenceEncoder, theirs: SentenceTransformer) -> None:
    np.testing.assert_allclose(ours.encode(SENTENCES), theirs.encode(SENTENCES), atol=1e-5, rtol=0)


@pytest.mark.parametrize("backend", ["torch", "auto"])
@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_each_architecture_gives_sentence_transformers_vectors(
    architecture: str, backend: str, hf_dirs: dict[str, Path], tmp_path: Path
) -> None:
    pooling = "lasttoken" if architecture in DECODERS else "mean"
    theirs = st_model(hf_dirs[architecture], pooling, dense=architecture == "bert")
    theirs.save(str(tmp_path / "st"))
    ours = SentenceEncoder.from_pretrained(
        tmp_path / "st", device="cpu", precision="float32", backend=backend
    )
    assert_same(ours, theirs)
    if backend == "auto" and architecture in TORCH_ON_AUTO:
        assert ours.plan.backend == "torch" and TORCH_ON_AUTO[architecture] in ours.plan.fallbacks[0]


@pytest.mark.parametrize(
    "pooling",
    [
        "cls",
        "max",
        "mean",
        "mean_sqrt_len_tokens",
        "weightedmean",
        "lasttoken",
        ("cls", "mean"),
        ("max", "cls"),
    ],
    ids=str,
)
@pytest.mark.parametrize("architecture", ["bert", "roberta"])
def test_every_pooling_mode_on_both_backends_and_saved_both_ways(
    architecture: str, pooling: str | tuple[str, ...], hf_dirs: dict[str, Path], tmp_path: Path
) -> None:
    theirs = st_model(hf_dirs[architecture], pooling)
    theirs.save(str(tmp_path / "st"))
    for backend in ("torch", "auto"):
        ours = SentenceEncoder.from_pretrained(
            tmp_path / "st", device="cpu", precision="float32", backend=backend
        )
        assert_same(ours, theirs)
    ours.save(tmp_path / "sbert")  # and sentence-transformers reads what sbert writes
    assert_same(ours, SentenceTransformer(str(tmp_path / "sbert"), device="cpu"))


def test_a_dense_layer_after_several_pooling_modes_takes_their_concatenation(
    hf_dirs: dict[str, Path], tmp_path: Path
) -> None:
    theirs = st_model(hf_dirs["bert"], ("cls", "mean"), dense=True)  # Dense(64 → 16)
    theirs.save(str(tmp_path / "st"))
    assert_same(SentenceEncoder.from_pretrained(tmp_path / "st", device="cpu", precision="float32"), theirs)


@pytest.mark.parametrize("include_prompt", [True, False])
@pytest.mark.parametrize("architecture", ["bert", "qwen2"])
def test_prompts_on_an_encoder_and_a_decoder(
    architecture: str, include_prompt: bool, hf_dirs: dict[str, Path], tmp_path: Path
) -> None:
    pooling = "lasttoken" if architecture in DECODERS else "mean"
    theirs = st_model(hf_dirs[architecture], pooling, prompts=PROMPTS, default_prompt_name="query")
    theirs[1].include_prompt = include_prompt
    theirs.save(str(tmp_path / "st"))
    ours = SentenceEncoder.from_pretrained(tmp_path / "st", device="cpu", precision="float32")
    assert_same(ours, theirs)
    np.testing.assert_allclose(ours.encode_document(SENTENCES), theirs.encode_document(SENTENCES), atol=1e-5)


def test_a_decoder_left_padded_by_its_tokenizer_gives_the_same_vectors(
    hf_dirs: dict[str, Path], tmp_path: Path
) -> None:
    left = Path(shutil.copytree(hf_dirs["qwen2"], tmp_path / "left"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(left)
    tokenizer.padding_side = "left"
    tokenizer.save_pretrained(left)
    theirs = st_model(left, "lasttoken")
    theirs.save(str(tmp_path / "st"))
    assert_same(SentenceEncoder.from_pretrained(tmp_path / "st", device="cpu", precision="float32"), theirs)
