"""StaticEmbedding: text → tokens → one stored vector per token → their mean. No transformer runs.

The input module of a static model (sentence-transformers' ``StaticEmbedding``): a Rust tokenizer
and a token table. A sentence's vector is the mean of its tokens' rows: Rust tokenization of the
whole batch, then one ``embedding_bag`` over the flat token ids (a sparse mean in C++, no Python loop
per sentence). It pools by itself, so the :class:`~sbert.SentenceEncoder` holding it skips pooling.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, normalizers
from torch import Tensor, nn

from sbert.base.errors import ModelLoadError
from sbert.base.inputs import check_max_seq_length
from sbert.modules.checks import check_finite_table
from sbert.modules.module import Module
from sbert.modules.transformer import Tokenized

# What a static model without a token limit reports as max_seq_length (model2vec writes the same).
NO_LIMIT = 1_000_000
# Sentences per tokenizer call and per sparse mean: bounds the memory of huge inputs.
CHUNK = 65536


class FlatIds(Sequence[Sequence[int]]):
    """Token ids of many sentences end to end (no list per sentence): what a static model tokenizes to.

    Args:
        ids: Every sentence's ids, one after the other, (tokens,).
        lengths: Tokens of each sentence, (n,).
    """

    def __init__(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        self.ids, self.lengths = ids, lengths
        self.starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # (n + 1,)

    @classmethod
    def of(cls, rows: Sequence[Sequence[int]]) -> FlatIds:
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        return cls(np.fromiter(itertools.chain.from_iterable(rows), np.int64, int(lengths.sum())), lengths)

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, index):  # type: ignore[no-untyped-def,override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = range(len(self))[index]  # an IndexError past the end, as a list gives
        return self.ids[self.starts[position] : self.starts[position + 1]].tolist()

    def span(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """The flat ids and lengths of sentences ``start`` to ``stop``."""
        return self.ids[self.starts[start] : self.starts[stop]], self.lengths[start:stop]


class StaticEmbedding(Module):
    """A tokenizer and a (vocabulary, dim) token table whose rows a sentence averages.

    Args:
        tokenizer: A Rust ``tokenizers.Tokenizer``; sentences are tokenized without special tokens.
        weights: The token table, shape (vocabulary, dim).
        max_seq_length: Keep only the first this many tokens of a sentence (``None``: all of them).

    Examples:
        >>> from tokenizers.models import WordLevel
        >>> from tokenizers.pre_tokenizers import Whitespace
        >>> tokenizer = Tokenizer(WordLevel({"[UNK]": 0, "a": 1, "cat": 2}, unk_token="[UNK]"))
        >>> tokenizer.pre_tokenizer = Whitespace()
        >>> module = StaticEmbedding(tokenizer, torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
        >>> module(module.collate(module.tokenize(["a cat"]).ids)).tolist()
        [[0.5, 0.5]]
    """

    st_type = "sentence_transformers.sentence_transformer.modules.static_embedding.StaticEmbedding"
    pools = True  # its output is one vector per sentence: no Pooling module after it

    def __init__(
        self, tokenizer: Tokenizer, weights: Tensor | np.ndarray, max_seq_length: int | None = None
    ) -> None:
        super().__init__()
        table = torch.as_tensor(weights, dtype=torch.float32)
        if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
            raise ValueError(
                f"a static model needs a (vocabulary, dim) table, got shape {tuple(table.shape)}"
            )
        self.embedding = nn.EmbeddingBag.from_pretrained(table, freeze=False, mode="mean")
        self.tokenizer = tokenizer
        tokenizer.no_padding()
        tokenizer.no_truncation()  # truncation is ours, so it can be counted and reported
        self.ascii_tokenizer = ascii_twin(tokenizer)
        check_max_seq_length(max_seq_length, None, "StaticEmbedding")
        self.limit = max_seq_length

    @classmethod
    def load(cls, folder: Path, max_seq_length: int | None = None, **options: Any) -> StaticEmbedding:
        """Read ``tokenizer.json`` (whose truncation, if any, is the default ``max_seq_length``) and
        the token table ``model.safetensors`` (``embedding.weight``, or model2vec's tensors)."""
        tokenizer_file = folder / "tokenizer.json"
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as error:
            raise ModelLoadError(f"{tokenizer_file}: cannot be read as a tokenizer: {error}") from error
        weights = _table(folder / "model.safetensors")
        check_finite_table(weights, folder / "model.safetensors", tokenizer)
        if weights.shape[0] < tokenizer.get_vocab_size():
            raise ModelLoadError(
                f"{folder / 'model.safetensors'}: {weights.shape[0]} token vectors for a vocabulary of "
                f"{tokenizer.get_vocab_size()} tokens"
            )
        limit = (tokenizer.truncation or {}).get("max_length") if max_seq_length is None else max_seq_length
        check_max_seq_length(limit, None, str(folder))
        return cls(tokenizer, weights, max_seq_length=limit)

    def save(self, folder: Path) -> None:
        """The token table and ``tokenizer.json``, truncating at ``max_seq_length`` if set
        (sentence-transformers truncates as the tokenizer says)."""
        weight = self.embedding.weight.detach().cpu().contiguous()
        save_file({"embedding.weight": weight}, str(folder / "model.safetensors"))
        tokenizer = Tokenizer.from_str(self.tokenizer.to_str())
        if self.limit is not None:
            tokenizer.enable_truncation(self.limit)
        tokenizer.save(str(folder / "tokenizer.json"))

    @property
    def dim(self) -> int:
        return int(self.embedding.embedding_dim)

    @property
    def max_seq_length(self) -> int:
        return self.limit or NO_LIMIT

    @max_seq_length.setter
    def max_seq_length(self, value: int | None) -> None:
        check_max_seq_length(value, None, "StaticEmbedding.max_seq_length")  # None: no limit
        self.limit = value

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        """Token ids of each text (no special tokens), truncated to ``max_seq_length``, kept flat."""
        texts = list(texts)
        parts = [self.token_ids(texts[start : start + CHUNK]) for start in range(0, len(texts), CHUNK)]
        if not parts:
            return Tokenized(FlatIds(np.zeros(0, np.int64), np.zeros(0, np.int64)), 0)
        ids = np.concatenate([part[0] for part in parts])
        lengths = np.concatenate([part[1] for part in parts])
        return Tokenized(FlatIds(ids, lengths), sum(part[2] for part in parts))

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text before truncation."""
        return [len(e.ids) for e in self._encodings(list(texts))]

    def prompt_length(self, prompt: str) -> int:
        """0: a static model always averages the prompt's tokens too (sentence-transformers'
        ``StaticEmbedding`` has no ``include_prompt``)."""
        return 0

    def collate(self, token_ids: Sequence[Sequence[int]]) -> dict[str, Tensor]:
        """``forward()``'s input for tokenized sentences: flat ids and where each sentence starts."""
        flat = token_ids if isinstance(token_ids, FlatIds) else FlatIds.of(token_ids)
        return self.flat(flat.ids, flat.lengths)

    def flat(self, ids: np.ndarray, lengths: np.ndarray) -> dict[str, Tensor]:
        """Every sentence's ids end to end, and where each sentence starts: no padding."""
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        device = self.embedding.weight.device
        return {
            "input_ids": torch.from_numpy(ids).to(device),  # (tokens,)
            "offsets": torch.from_numpy(offsets).to(device),  # (batch,)
        }

    def forward(self, features: dict[str, Tensor]) -> Tensor:
        """Sentence vectors (batch, dim): the mean of each sentence's token rows (zero when empty)."""
        return self.embedding(features["input_ids"], features["offsets"])

    def token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
        """Flat token ids (tokens,), tokens per sentence (n,) after truncation, and how many were cut."""
        rows = [e.ids for e in self._encodings(texts)]
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        ids = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
        if self.limit is None or not (lengths > self.limit).any():
            return ids, lengths, 0
        # Keep the first `limit` tokens of each sentence: position within the sentence < limit.
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        keep = np.arange(ids.size) - starts < self.limit
        return ids[keep], np.minimum(lengths, self.limit), int((lengths > self.limit).sum())

    def _encodings(self, texts: list[str]) -> list[Any]:
        """The tokenizer's encodings of ``texts`` (no special tokens), in order.

        Printable ASCII text goes through :attr:`ascii_tokenizer` when there is one: the same ids
        for a third less time (BERT's normalizer tracks every character's alignment through Unicode
        decomposition, accent stripping and control-character removal, all no-ops on such text).
        """
        twin = self.ascii_tokenizer
        if twin is None:
            return self._full_encodings(texts)
        plain = [text.isascii() and text.isprintable() for text in texts]
        if all(plain):
            return twin.encode_batch_fast(texts, add_special_tokens=False)
        if not any(plain):
            return self._full_encodings(texts)
        fast = iter(
            twin.encode_batch_fast([t for t, ok in zip(texts, plain) if ok], add_special_tokens=False)
        )
        full = iter(self._full_encodings([t for t, ok in zip(texts, plain) if not ok]))
        return [next(fast) if ok else next(full) for ok in plain]

    def _full_encodings(self, texts: list[str]) -> list[Any]:
        try:
            return self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        except TypeError:
            # Lone surrogates are not valid UTF-8 for the Rust tokenizer: replace them, as the
            # transformer path does, rather than fail on text a user cannot easily see.
            fixed = [text.encode("utf-8", errors="replace").decode("utf-8") for text in texts]
            return self.tokenizer.encode_batch_fast(fixed, add_special_tokens=False)


def _table(file: Path) -> torch.Tensor:
    """The (vocabulary, dim) table of ``file``: ``embedding.weight``, or model2vec's folded tensors."""
    try:
        state = load_file(str(file))
    except FileNotFoundError as error:
        raise ModelLoadError(f"{file}: missing (a static model keeps its token vectors there)") from error
    except Exception as error:
        raise ModelLoadError(f"{file}: cannot be loaded: {error}") from error
    if "embedding.weight" in state:
        return state["embedding.weight"].float()
    if "embeddings" not in state:
        raise ModelLoadError(
            f"{file}: has neither 'embedding.weight' nor 'embeddings' (holds {sorted(state)})"
        )
    table = state["embeddings"].float()
    if "mapping" in state:  # model2vec's vocabulary quantization: token id → row
        table = table[state["mapping"].long()]
    if "weights" in state:  # model2vec's per-token weights, folded in as the mean would apply them
        table = table * state["weights"].float()[:, None]
    return table.contiguous()


def ascii_twin(tokenizer: Tokenizer) -> Tokenizer | None:
    """A copy of ``tokenizer`` that gives the same ids on printable ASCII text with less work, or ``None``.

    Only for BERT's normalizer: on printable ASCII it changes nothing but the case (no control
    character to drop, no whitespace but the space, no accent, no Chinese character), so the copy
    keeps just the lowercasing (if any) and everything else as it was.

    Example:
        >>> from sbert.model.hub import bundled_model_path
        >>> bert = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
        >>> twin = ascii_twin(bert)
        >>> twin.encode("A Man, playing!").ids == bert.encode("A Man, playing!").ids
        True
    """
    config = json.loads(tokenizer.to_str()).get("normalizer") or {}
    if config.get("type") != "BertNormalizer":
        return None
    twin = Tokenizer.from_str(tokenizer.to_str())
    twin.normalizer = normalizers.Lowercase() if config.get("lowercase", True) else None
    return twin
