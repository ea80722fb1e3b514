"""Shared fixtures: a tiny random BERT built from a config (no download), the data directory, and
the bundled all-MiniLM-L6-v2 for integration tests."""

from __future__ import annotations

import os
import string
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.cuda_rules import CudaRules
from tests.cuda_rules import cuda_rules as enter_cuda_rules
from tests.schedule import pytest_collection_modifyitems, pytest_configure  # noqa: F401  (the slow files first)
from transformers import BertConfig, BertModel, BertTokenizerFast

from sbert import SentenceEncoder
from sbert.inference.cpu import this_cpu
from sbert.inference.precision import openvino_installed

REPO = Path(__file__).resolve().parents[1]


def share_the_cores() -> None:
    """Under pytest-xdist (the README's ``-n auto``) each worker, and the processes it starts, gets its
    share of the cores: two workers of two threads each on a 2-core machine would spend the suite's time
    switching between four busy threads."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        threads = max(1, len(os.sched_getaffinity(0)) // workers)
        torch.set_num_threads(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)


share_the_cores()

# Tests that compute int8 through sbert's plan need the real instruction: elsewhere sbert rightly
# runs float32 instead, and tests/inference/test_cpu_classes.py checks that plan by simulation.
needs_native_int8 = pytest.mark.skipif(
    not (this_cpu().int8 and openvino_installed(with_nncf=True)),
    reason="sbert runs int8 only where the CPU has int8 dot products (VNNI or AMX) and the openvino "
    "extra is installed; elsewhere it falls back to float32, which test_cpu_classes.py checks by simulation",
)
WORDS = [
    "a",
    "an",
    "the",
    "man",
    "woman",
    "child",
    "dog",
    "cat",
    "is",
    "are",
    "plays",
    "playing",
    "guitar",
    "piano",
    "music",
    "food",
    "eats",
    "eating",
    "cooks",
    "runs",
    "running",
    "park",
    "street",
    "car",
    "red",
    "blue",
    "big",
    "small",
    "happy",
    "sad",
    "sun",
    "rain",
    "space",
    "rocket",
    "bug",
    "code",
    "test",
    "and",
    "of",
    "in",
    "on",
    "with",
    "to",
    "for",
    "not",
    "no",
    "yes",
    "good",
    "bad",
]


@pytest.fixture(scope="session", autouse=True)
def graph_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Calibrated graphs go to a folder of this test session, never to the user's cache."""
    path = tmp_path_factory.mktemp("graph-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SBERT_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture()
def tiny_encoder(tiny_model_dir: Path) -> SentenceEncoder:
    # float32 on PyTorch: unit tests compare with exact references; bf16, int8 and OpenVINO have
    # their own tests.
    return SentenceEncoder.from_pretrained(tiny_model_dir, device="cpu", precision="float32", backend="torch")


@pytest.fixture(scope="session")
def tiny_static_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A static model on the tiny BERT's tokenizer with a random 8-d token table (a fast first stage)."""
    from tokenizers import Tokenizer

    from sbert.static import StaticEncoder

    tokenizer = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    table = torch.randn(tokenizer.get_vocab_size(), 8, generator=torch.Generator().manual_seed(0))
    path = tmp_path_factory.mktemp("tiny-static") / "static"
    StaticEncoder(tokenizer, table, name="tiny-static").save(path)
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = Path(os.path.abspath(os.environ.get("SBERT_DATA", REPO.parent / "shared" / "data")))
    if not (path / "stsb").is_dir():
        pytest.skip(f"data directory {path} not found (set SBERT_DATA)")
    return path


@pytest.fixture(scope="session")
def bundled_encoder() -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(device="cpu", precision="float32")


def build_tiny_bert(path: Path, seed: int = 0) -> Path:
    """Save a randomly initialised BERT (hidden 32, 2 layers) with a small WordPiece vocabulary.

    The tokenizer is built with the ``tokenizers`` library: under transformers 5,
    ``BertTokenizerFast(vocab_file=...)`` maps every word to [UNK].
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    path.mkdir(parents=True, exist_ok=True)
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    vocab = list(
        dict.fromkeys(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars), *WORDS]
        )
    )
    backend = Tokenizer(models.WordPiece({token: i for i, token in enumerate(vocab)}, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab.index("[CLS]")), ("[SEP]", vocab.index("[SEP]"))],
    )
    backend.decoder = decoders.WordPiece()
    tokenizer = BertTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def trainable_model_dir(tiny_model_dir: Path) -> Path:
    return tiny_model_dir


@pytest.fixture()
def trainable_encoder(trainable_model_dir: Path) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(trainable_model_dir, device="cpu")


PROMPTS = {"query": "query: ", "document": "passage: "}


@pytest.fixture(scope="session", params=[True, False], ids=["include_prompt", "prompt_left_out"])
def prompted_model_dir(
    request: pytest.FixtureRequest, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The tiny BERT saved by sentence-transformers with prompts, pooling the prompt's tokens or not."""
    return build_prompted(tiny_model_dir, tmp_path_factory.mktemp("prompted") / "model", request.param)


@pytest.fixture(scope="session")
def prompted_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny BERT with prompts whose pooling leaves the prompt out (for the layers above the model)."""
    return build_prompted(tiny_model_dir, tmp_path_factory.mktemp("prompted") / "model", include_prompt=False)


def build_prompted(tiny_model_dir: Path, path: Path, include_prompt: bool) -> Path:
    """Save the tiny BERT with sentence-transformers itself, with a query and a document prompt (the
    query one the default)."""
    from sentence_transformers import SentenceTransformer, models

    transformer = models.Transformer(str(tiny_model_dir), max_seq_length=64)
    pooling = models.Pooling(transformer.get_embedding_dimension(), "mean", include_prompt=include_prompt)
    model = SentenceTransformer(
        modules=[transformer, pooling], prompts=PROMPTS, default_prompt_name="query", device="cpu"
    )
    model.save(str(path))
    return path


GPU_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# Worst cosine distance to float32 of the GPU paths on the tiny random BERT (measured: fp16 ~1e-6,
# bf16 ~1e-4), by the dtype they compute in.
GPU_BOUND = {torch.float32: 1e-6, torch.float16: 1e-4, torch.bfloat16: 3e-3}
_GPU_WORDS = ["a", "man", "plays", "the", "guitar", "while", "dog", "runs", "in", "park", "small", "red"]
_GPU_WORDS += ["car", "and", "big", "blue", "rain", "sky"]


def gpu_sentences(count: int, seed: int = 0, longest: int = 39) -> list[str]:
    """``count`` random sentences of 1 to ``longest`` words, of varied lengths (the GPU paths' inputs)."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_GPU_WORDS, size=int(rng.integers(1, longest + 1)))) for _ in range(count)]


@pytest.fixture()
def cuda_rules() -> Iterator[CudaRules]:
    """The test's body under CUDA's rules on the CPU (``tests/cuda_rules.py``): mixed floating dtypes
    refused where CUDA's kernels refuse them, host synchronisations counted in ``.syncs``."""
    with enter_cuda_rules() as rules:
        yield rules
