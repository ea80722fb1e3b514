"""BatchTokenizer against transformers' own call (the oracle): same ids, same truncation count, for
WordPiece, byte-level BPE and Unigram tokenizers, both truncation sides and special-token splitting;
and safe from several threads while transformers' call reconfigures the shared tokenizer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from sbert.modules import Transformer
from sbert.modules.batch_tokenizer import BatchTokenizer

CORPUS = [
    "A man is playing a guitar.",
    "A woman is slicing an onion while the dog sleeps on the kitchen floor.",
    "Rain.",
    "Zwei Männer spielen Fußball im Park, während die Sonne untergeht.",
    "naïve café résumé — 東京 🎸",
]
TEXTS = [*CORPUS, "", "   ", "guitar " * 40, "the [SEP] token <s> and </s> inside a text"]


def byte_level_bpe() -> PreTrainedTokenizerFast:
    """A RoBERTa/GPT-2-style tokenizer trained here on CORPUS (no download)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "<pad>", "</s>"])
    tokenizer.train_from_iterator(CORPUS * 5, trainer)
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def unigram() -> PreTrainedTokenizerFast:
    """A T5-style tokenizer (Unigram, Metaspace, an end-of-sequence token) trained here on CORPUS."""
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=120, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>"
    )
    tokenizer.train_from_iterator(CORPUS * 5, trainer)
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )


@pytest.fixture(params=["wordpiece", "byte_level_bpe", "unigram"])
def tokenizer(request: pytest.FixtureRequest, tiny_model_dir: Path) -> Any:
    if request.param == "wordpiece":
        return AutoTokenizer.from_pretrained(tiny_model_dir)
    return byte_level_bpe() if request.param == "byte_level_bpe" else unigram()


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("split_special_tokens", [False, True])
@pytest.mark.parametrize("max_length", [6, 512, None])
def test_the_ids_are_transformers_ids(
    tokenizer: Any, side: str, split_special_tokens: bool, max_length: int | None
) -> None:
    tokenizer.truncation_side = side
    tokenizer.split_special_tokens = split_special_tokens
    cut = {"truncation": True, "max_length": max_length} if max_length else {"truncation": False}
    expected = tokenizer(TEXTS, padding=False, verbose=False, **cut)
    ids, truncated = BatchTokenizer(tokenizer, max_length)(TEXTS)
    assert ids == expected["input_ids"]
    assert truncated == sum(1 for encoding in expected.encodings if encoding.overflowing)
    assert (truncated > 0) == (max_length == 6)


def test_counts_and_prompt_lengths_are_transformers_counts(tiny_model_dir: Path) -> None:
    module = Transformer.load(tiny_model_dir, max_seq_length=16)
    whole = module.tokenizer(TEXTS, truncation=False, verbose=False)["input_ids"]
    assert module.token_counts(TEXTS) == [len(row) for row in whole]
    assert max(module.token_counts(TEXTS)) > 16  # not cut to max_seq_length
    assert module.prompt_length("query: ") == len(module.tokenizer(["query: "])["input_ids"][0]) - 1


def test_a_changed_setting_builds_a_new_copy(tiny_model_dir: Path) -> None:
    module = Transformer.load(tiny_model_dir)
    first = module._batch_tokenizer(module.max_seq_length)
    assert first is not None and module._batch_tokenizer(module.max_seq_length) is first
    module.max_seq_length = 5
    assert (
        module.tokenize(["guitar " * 20]).ids[0]
        == module.tokenizer(["guitar " * 20], truncation=True, max_length=5)["input_ids"][0]
    )
    text = ["a man plays the guitar in the park"]
    right = module.tokenize(text).ids[0]
    module.tokenizer.truncation_side = "left"
    left = module.tokenize(text).ids[0]
    assert left != right  # the copy follows the new side, as transformers' call does
    assert left == module.tokenizer(text, truncation=True, max_length=5)["input_ids"][0]


def test_threads_tokenize_at_once_while_transformers_call_reconfigures(tiny_model_dir: Path) -> None:
    """token_counts() goes through transformers' call without truncation, which reconfigures the
    shared Rust tokenizer; tokenize() from eight threads meanwhile must neither fail nor change."""
    module = Transformer.load(tiny_model_dir, max_seq_length=8)
    texts = [f"{text} {i}" for i in range(200) for text in CORPUS[:3]]
    expected = module.tokenizer(texts, truncation=True, max_length=8)["input_ids"]

    def tokenize(piece: int) -> list[list[int]]:
        return [list(row) for row in module.tokenize(texts[piece::8]).ids]

    def count(_: int) -> list[int]:
        return module.token_counts(texts)

    with ThreadPoolExecutor(10) as pool:
        counts = [pool.submit(count, i) for i in range(4)]
        pieces = list(pool.map(tokenize, range(8)))
    assert all(len(future.result()) == len(texts) for future in counts)
    assert all(pieces[i] == expected[i::8] for i in range(8))


class PythonStepTokenizer(PreTrainedTokenizerFast):
    """A tokenizer class that adds a Python step of its own, as layout or table tokenizers do."""

    def _encode_plus(self, *args: Any, **kwargs: Any) -> Any:
        return super()._encode_plus(*args, **kwargs)


def test_a_tokenizer_with_a_python_step_keeps_transformers_call(tiny_model_dir: Path) -> None:
    plain = AutoTokenizer.from_pretrained(tiny_model_dir)
    stepped = PythonStepTokenizer(tokenizer_object=plain.backend_tokenizer, pad_token="[PAD]")
    assert BatchTokenizer.supports(plain) and not BatchTokenizer.supports(stepped)
    with pytest.raises(ValueError, match="PythonStepTokenizer encodes in Python too"):
        BatchTokenizer(stepped, 8)
    module = Transformer.load(tiny_model_dir)
    module.tokenizer = stepped
    assert module._batch_tokenizer(module.max_seq_length) is None
    assert (
        module.tokenize(TEXTS).ids
        == stepped(TEXTS, truncation=True, max_length=module.max_seq_length)["input_ids"]
    )
