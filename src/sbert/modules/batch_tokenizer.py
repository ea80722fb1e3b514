"""Texts → token ids from a private copy of the Rust tokenizer: the same ids as transformers' call,
safe from several threads at once, and without the per-call Python work.

transformers' ``tokenizer(texts, truncation=True, max_length=n)`` reconfigures the Rust tokenizer it
shares (truncation, padding, special-token splitting) before encoding, so a call running meanwhile
in another thread may encode with the other's settings: ids cut where they should not be, or not
cut where they should, without an error (14 of 60 concurrent calls here; the server counts tokens
while a batch encodes). And the configuration, offsets and ``BatchEncoding`` cost as much as the
encoding itself for short sentences. A :class:`BatchTokenizer` holds its own copy,
configured once and never changed, and encodes without offsets: 12.0k → 24.5k sentences/s on one
thread, 43.8k on two (AMD EPYC, 2 cores, STSb test ×8, all-MiniLM-L6-v2's tokenizer, 2026-11-26,
``benchmarks/tokenizing.py``); its threads scale with the cores, which the GPU pipeline needs
(:meth:`~sbert.inference.cuda.pipeline.CudaPipeline.run_texts`).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from typing import Any

from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast


class BatchTokenizer:
    """Token ids with special tokens, cut to ``max_length`` tokens, as transformers' call gives them.

    Args:
        tokenizer: A fast tokenizer whose class encodes through the Rust backend alone
            (:meth:`supports`).
        max_length: Longer texts are truncated to this many tokens (special tokens included);
            ``None``: never truncated.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> tokenizer = SentenceEncoder.from_pretrained().tokenizer
        >>> ids, truncated = BatchTokenizer(tokenizer, 8)(["A man plays a guitar.", "word " * 20])
        >>> ids[0] == tokenizer(["A man plays a guitar."])["input_ids"][0], len(ids[1]), truncated
        (True, 8, 1)
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, max_length: int | None) -> None:
        if not self.supports(tokenizer):
            raise ValueError(f"{type(tokenizer).__name__} encodes in Python too; use its own call")
        backend: Any = copy.deepcopy(tokenizer.backend_tokenizer)
        backend.no_padding()
        side, split_special_tokens, _ = _settings(tokenizer)
        if max_length is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(max_length, stride=0, strategy="longest_first", direction=side)
        backend.encode_special_tokens = split_special_tokens
        self.backend = backend
        self.max_length = max_length
        self.source, self.settings = tokenizer, _settings(tokenizer)
        # Without offsets where this tokenizers release has it (0.20 and later).
        self._encode = getattr(backend, "encode_batch_fast", backend.encode_batch)

    @staticmethod
    def supports(tokenizer: PreTrainedTokenizerBase) -> bool:
        """Whether the tokenizer's class adds no Python step of its own to transformers' fast call
        (layout, entity and table tokenizers do; BERT's, RoBERTa's, T5's, Qwen's... do not)."""
        kind = type(tokenizer)
        return (
            isinstance(tokenizer, PreTrainedTokenizerFast)
            and kind.__call__ is PreTrainedTokenizerBase.__call__
            and all(
                getattr(kind, step, None) is getattr(PreTrainedTokenizerFast, step, None)
                for step in ("_encode_plus", "_batch_encode_plus")
            )
        )

    def configured_as(self, tokenizer: PreTrainedTokenizerBase, max_length: int | None) -> bool:
        """Whether this copy still encodes as ``tokenizer`` does with ``max_length``: users change
        the length, the truncation side, and add tokens (a copy made before ``add_tokens`` would
        split them)."""
        return (
            tokenizer is self.source
            and max_length == self.max_length
            and _settings(tokenizer) == self.settings
        )

    def __call__(self, texts: Sequence[str]) -> tuple[list[list[int]], int]:
        """Token ids of each text, and how many texts were cut to ``max_length`` (0 where ``None``)."""
        encodings = self._encode(list(texts), add_special_tokens=True)
        truncated = sum(1 for encoding in encodings if encoding.overflowing)
        return [encoding.ids for encoding in encodings], truncated


class ThreadTokenizers:
    """A :class:`BatchTokenizer` for each thread that asks: a copy per thread, never shared.

    One copy shared by many threads gives the same ids but scales badly: each encode takes the
    copy's shared locks (the Rust bindings keep the model, normalizer and pre-tokenizer behind
    reference-counted read-write locks), so 15 threads on one copy ran 153k sentences/s where 15
    copies ran 244k (NVIDIA H200's host, 16 cores, STSb test ×8, 2026-11-27,
    ``benchmarks/tokenizing_options.py``). A thread keeps its copies while it lives (the GPU
    pipeline's threads live as long as the pipeline); copying or pickling starts empty.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, tokenizer: PreTrainedTokenizerBase, max_length: int | None) -> BatchTokenizer:
        """This thread's copy that encodes as ``tokenizer`` does with ``max_length``, built on first
        need and again when a setting it copied changes."""
        built: dict[bool, BatchTokenizer] | None = getattr(self._local, "built", None)
        if built is None:
            built = self._local.built = {}
        found = built.get(max_length is None)
        if found is None or not found.configured_as(tokenizer, max_length):
            found = built[max_length is None] = BatchTokenizer(tokenizer, max_length)
        return found

    def __reduce__(self) -> tuple[type[ThreadTokenizers], tuple[()]]:
        return ThreadTokenizers, ()  # thread-local copies do not travel (deepcopy, pickle)


def _settings(tokenizer: PreTrainedTokenizerBase) -> tuple[str, bool, int]:
    """What transformers' call reads from the tokenizer each time (truncation side, special-token
    splitting), and its vocabulary's size with added tokens."""
    split_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
    return str(tokenizer.truncation_side), split_special_tokens, len(tokenizer)
