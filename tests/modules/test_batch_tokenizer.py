"""BatchTokenizer against transformers' own call (the oracle): same ids, same truncation count, for
WordPiece, byte-level BPE and Unigram tokenizers, both truncation sides and special-token splitting;
and safe from several threads while transformers' call reconfigures the shared tokenizer."""

from __future__ import annotations

import copy
import pickle
import threading
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
    module.tokenizer.add_tokens(["guitarpark"])  # a copy made before would split the new token
    added = ["the guitarpark"]
    assert module.tokenize(added).ids == module.tokenizer(added, truncation=True, max_length=5)["input_ids"]
    module.tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)  # another tokenizer altogether
    assert module.tokenize(added).ids == module.tokenizer(added, truncation=True, max_length=5)["input_ids"]


def concurrent_results(module: Transformer, texts: list[str], calls: int) -> list[tuple[str, list[int]]]:
    """Lengths of tokenize() (cut) and token_counts() (whole) run at once from six threads."""

    def cut(_: int) -> tuple[str, list[int]]:
        return "cut", [len(row) for row in module.tokenize(texts).ids]

    def whole(_: int) -> tuple[str, list[int]]:
        return "whole", module.token_counts(texts)

    with ThreadPoolExecutor(6) as pool:
        return list(pool.map(lambda i: (cut if i % 2 else whole)(i), range(calls)))


def test_cut_and_whole_token_ids_from_several_threads_at_once_stay_right(tiny_model_dir: Path) -> None:
    """transformers' call reconfigures the Rust tokenizer it shares before each call, so a call
    running meanwhile in another thread takes the other's truncation: a silent wrong answer (the
    server counts tokens while a batch encodes). Through the private copies both stay right."""
    module = Transformer.load(tiny_model_dir, max_seq_length=8)
    texts = ["a man plays the guitar in the park while the dog runs " * 2] * 1500
    whole = len(module.tokenizer(texts[:1])["input_ids"][0])
    wrong = [
        (kind, sorted(set(lengths)))
        for kind, lengths in concurrent_results(module, texts, 40)
        if set(lengths) != ({8} if kind == "cut" else {whole})
    ]
    assert whole > 8 and not wrong


def test_each_thread_encodes_with_its_own_copy_and_the_ids_of_one_serial_call(tiny_model_dir: Path) -> None:
    """Threads sharing one copy contend on its locks: each thread gets its own, built once, and
    together they give exactly the ids of one call on the calling thread."""
    module = Transformer.load(tiny_model_dir, max_seq_length=12)
    texts = [f"{text} {i}" for i in range(50) for text in TEXTS]
    expected = module.tokenize(texts).ids
    pieces = [texts[start : start + 37] for start in range(0, len(texts), 37)]
    results: dict[int, list[list[int]]] = {}
    copies: dict[int, set[int]] = {}
    barrier = threading.Barrier(4)  # every worker alive at once: four threads, four copies

    def work(worker: int) -> None:
        barrier.wait(timeout=10)
        for index in range(worker, len(pieces), 4):
            copies.setdefault(worker, set()).add(id(module._batch_tokenizer(module.max_seq_length)))
            results[index] = list(module.tokenize(pieces[index]).ids)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    got = [row for index in range(len(pieces)) for row in results[index]]
    assert got == expected
    assert len(copies) == 4 and all(len(ids) == 1 for ids in copies.values())  # one copy a thread
    assert len(set().union(*copies.values())) == 4  # never shared
    assert id(module._batch_tokenizer(module.max_seq_length)) not in set().union(*copies.values())


def test_a_copied_or_pickled_transformer_builds_its_own_tokenizer_copies(tiny_model_dir: Path) -> None:
    module = Transformer.load(tiny_model_dir, max_seq_length=8)
    ids = module.tokenize(TEXTS).ids
    for other in (copy.deepcopy(module), pickle.loads(pickle.dumps(module))):
        assert other._batch_tokenizer(8) is not module._batch_tokenizer(8)
        assert other.tokenize(TEXTS).ids == ids


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
