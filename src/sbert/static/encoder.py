"""StaticEncoder: text → tokens → one stored vector per token → their mean. No transformer runs.

A static model keeps a table of token vectors (distilled from a transformer, see
:mod:`sbert.static.distill`) and embeds a sentence as the mean of its tokens' rows: Rust tokenization of
the whole batch, then one ``embedding_bag`` over the flat token ids (a sparse mean in C++, no Python
loop per sentence). It is a :class:`~sbert.SentenceEncoder` wherever one is used (stores, indexes,
search, mining, clustering, the server, evaluation) and is saved in sentence-transformers'
``StaticEmbedding`` layout, so ``SentenceTransformer(path)`` gives the same vectors.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer, normalizers
from torch import Tensor, nn

from sbert.encode_output import EncodeOutput, check_devices
from sbert.encoder import SentenceEncoder
from sbert.errors import ModelLoadError
from sbert.inference.cpu import this_cpu
from sbert.inference.plan import EnginePlan
from sbert.inputs import as_texts, check_count
from sbert.modules import Normalize, Pooling, Tokenized
from sbert.prompts import Prompts

logger = logging.getLogger("sbert")

# What a static model without a token limit reports as max_seq_length (model2vec writes the same).
NO_LIMIT = 1_000_000
# Sentences per tokenizer call: bounds the memory of the flat id array on huge inputs.
CHUNK = 65536


class StaticEncoder(SentenceEncoder):
    """A sentence encoder that averages stored token vectors (sentence-transformers' ``StaticEmbedding``).

    Args:
        tokenizer: A Rust ``tokenizers.Tokenizer``; sentences are tokenized without special tokens.
        weights: The token table, shape (vocabulary, dim).
        max_seq_length: Keep only the first this many tokens of a sentence (``None``: all of them).
        normalize: End with a Normalize layer (unit-length vectors), as a saved model may.
        name: What the model was loaded from, for display.

    Examples:
        >>> import torch
        >>> from tokenizers import Tokenizer
        >>> from tokenizers.models import WordLevel
        >>> from tokenizers.pre_tokenizers import Whitespace
        >>> tokenizer = Tokenizer(WordLevel({"[UNK]": 0, "a": 1, "cat": 2}, unk_token="[UNK]"))
        >>> tokenizer.pre_tokenizer = Whitespace()
        >>> model = StaticEncoder(tokenizer, torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
        >>> model.encode(["a cat", ""]).tolist()
        [[0.5, 0.5], [0.0, 0.0]]
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        weights: Tensor | np.ndarray,
        max_seq_length: int | None = None,
        normalize: bool = False,
        name: str | None = None,
    ) -> None:
        nn.Module.__init__(self)  # no Transformer: SentenceEncoder's own __init__ would insist on one
        table = torch.as_tensor(weights, dtype=torch.float32)
        if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
            raise ValueError(
                f"a static model needs a (vocabulary, dim) table, got shape {tuple(table.shape)}"
            )
        self.embedding = nn.EmbeddingBag.from_pretrained(table, freeze=False, mode="mean")
        self._tokenizer = tokenizer
        tokenizer.no_padding()
        tokenizer.no_truncation()  # truncation is ours, so it can be counted and reported
        self.ascii_tokenizer = ascii_twin(tokenizer)
        self.limit = max_seq_length
        self.pooling = Pooling(table.shape[1], "mean")
        self.layers = nn.ModuleList([Normalize()] if normalize else [])
        self.name = name or "unnamed"
        self.prompts = Prompts()
        self.source: str | None = None
        self.truncate_dim: int | None = None
        self.requested_precision = "float32"
        self.requested_backend = "torch"
        self.calibration_sentences: Sequence[str] | None = None

    @classmethod
    def load(
        cls, path: Path, name: str, max_seq_length: int | None = None, pooling: str | None = None
    ) -> StaticEncoder:
        """Read a directory in sentence-transformers' ``StaticEmbedding`` layout (see :mod:`sbert.static.io`)."""
        from sbert.static.io import load_static

        if pooling not in (None, "mean"):
            raise ModelLoadError(
                f"{path}: a static model averages its token vectors; pooling {pooling!r} is not available"
            )
        model = load_static(path, name=name, max_seq_length=max_seq_length)
        model.source = str(path)
        return model.eval()

    def save(self, path: str | Path) -> None:
        """Save as a directory that sbert and sentence-transformers both load (safetensors only)."""
        from sbert.static.io import save_static

        save_static(self, Path(path))
        self.save_similarity_fn_name(path)

    @property
    def dim(self) -> int:
        return int(self.embedding.embedding_dim)

    @property
    def max_seq_length(self) -> int:
        return self.limit or NO_LIMIT

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        check_count("max_seq_length", value)
        self.limit = None if value >= NO_LIMIT else int(value)

    @property
    def tokenizer(self) -> Tokenizer:
        """The Rust tokenizer (sentence-transformers' ``StaticEmbedding.tokenizer``)."""
        return self._tokenizer

    @property
    def device(self) -> torch.device:
        return self.embedding.weight.device

    @property
    def plan(self) -> EnginePlan:
        """Always float32 on PyTorch: a table lookup and a mean have nothing to gain from either."""
        return EnginePlan("float32", "torch", str(self.device), this_cpu(), "float32", "torch")

    def plan_for(self, precision: str, backend: str | None = None) -> EnginePlan:
        """:attr:`plan`, whatever was asked: only float32 on PyTorch runs a static model."""
        return self.plan

    def token_ids(self, sentences: Sequence[str]) -> Tokenized:
        """Token ids of each sentence (no special tokens), truncated to ``max_seq_length``."""
        ids, lengths, truncated = self._token_ids(list(sentences))
        starts = np.concatenate([[0], np.cumsum(lengths)])
        return Tokenized([ids[a:b].tolist() for a, b in itertools.pairwise(starts)], truncated)

    def token_counts(
        self, sentences: Sequence[str], prompt_name: str | None = None, prompt: str | None = None
    ) -> list[int]:
        """Tokens of each sentence, prompt included, before truncation (what ``sbert serve`` counts)."""
        texts, _ = self.with_prompt(sentences, prompt_name, prompt)
        return [len(e.ids) for e in self._encodings(texts)]

    def with_prompt(
        self, sentences: Sequence[str], prompt_name: str | None = None, prompt: str | None = None
    ) -> tuple[list[str], int]:
        """The sentences with the prompt before each; a static model always averages the prompt's
        tokens too (sentence-transformers' ``StaticEmbedding`` has no ``include_prompt``)."""
        text = self.prompts.resolve(prompt_name, prompt)
        return ([text + sentence for sentence in sentences] if text else list(sentences)), 0

    def forward(self, features: dict[str, Tensor], normalize: bool = True) -> Tensor:  # type: ignore[override]
        """Sentence vectors (batch, dim) of flat ``input_ids`` and per-sentence ``offsets`` (training)."""
        embeddings = self.embedding(features["input_ids"], features["offsets"])  # (batch, dim)
        for layer in self.layers:
            if normalize:
                embeddings = layer(embeddings)
        return embeddings

    def features(self, sentences: Sequence[str]) -> tuple[dict[str, Tensor], int]:
        """``forward()``'s input for ``sentences`` and how many were truncated."""
        ids, lengths, truncated = self._token_ids(list(sentences))
        return self._flat(ids, lengths), truncated

    def collate(self, token_ids: Sequence[Sequence[int]]) -> dict[str, Tensor]:
        """``forward()``'s input for tokenized sentences (what losses call when a static model trains)."""
        lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
        ids = np.fromiter(itertools.chain.from_iterable(token_ids), np.int64, int(lengths.sum()))
        return self._flat(ids, lengths)

    def _flat(self, ids: np.ndarray, lengths: np.ndarray) -> dict[str, Tensor]:
        """Every sentence's ids end to end, and where each sentence starts: no padding."""
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        return {
            "input_ids": torch.from_numpy(ids).to(self.device),  # (tokens,)
            "offsets": torch.from_numpy(offsets).to(self.device),  # (batch,)
        }

    def encode(  # type: ignore[override]
        self,
        sentences: str | Iterable[str],
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        output_value: str = "sentence_embedding",
        precision: str | None = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: str | torch.device | list[str] | None = None,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        pool: Any = None,
        chunk_size: int | None = None,
        *,
        normalize: bool = False,
        compute_precision: str | None = None,
        max_tokens: int | None = None,
        batch_cost_tokens: int | None = None,
        pack: bool = False,
    ) -> Any:
        """Embed sentences, in input order: the mean of each sentence's token vectors.

        Takes :meth:`SentenceEncoder.encode`'s arguments, with their meaning, so that every caller
        works unchanged; ``batch_size``, ``compute_precision`` (float32 only), ``max_tokens``,
        ``batch_cost_tokens`` and ``pack`` change nothing here: a whole chunk of sentences is one
        sparse mean. An empty string gets the zero vector (what sentence-transformers gives).

        Raises:
            TypeError: ``sentences`` is not a string or an ordered collection of strings, or an item
                is not a string (the message names its index and type).
            ValueError: ``compute_precision`` other than ``float32``/``auto``, an unknown output
                ``precision``, ``output_value="token_embeddings"``, or ``batch_size`` below 1.
        """
        check_count("batch_size", batch_size)
        output = EncodeOutput(
            output_value,
            precision,
            normalize or normalize_embeddings,
            self.truncate_dim if truncate_dim is None else truncate_dim,
            convert_to_numpy,
            convert_to_tensor,
        )
        if output.tokens:
            raise ValueError("a static model has no token embeddings: use output_value='sentence_embedding'")
        if compute_precision not in (None, "auto", "float32"):
            raise ValueError(f"a static model computes in float32, not {compute_precision!r}")
        if (target := check_devices(device, pool)) is not None:
            self.to(target)
        single = isinstance(sentences, str)
        texts, _ = self.with_prompt(as_texts(sentences), prompt_name, prompt)
        parts: list[Tensor] = []
        truncated = 0
        with torch.inference_mode():
            for start in range(0, len(texts), CHUNK):
                features, cut = self.features(texts[start : start + CHUNK])
                truncated += cut
                parts.append(self(features, normalize=True).float().cpu())
        if truncated:
            logger.warning(
                "%d of %d inputs were longer than max_seq_length=%d tokens and were truncated",
                truncated,
                len(texts),
                self.max_seq_length,
            )
        if len(parts) == 1:
            embeddings = parts[0]  # no copy: the common case of up to CHUNK sentences
        else:
            embeddings = torch.cat(parts) if parts else torch.empty((0, self.dim), dtype=torch.float32)
        return output.finish(embeddings, single)

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

    def _token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
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


def ascii_twin(tokenizer: Tokenizer) -> Tokenizer | None:
    """A copy of ``tokenizer`` that gives the same ids on printable ASCII text with less work, or ``None``.

    Only for BERT's normalizer: on printable ASCII it changes nothing but the case (no control
    character to drop, no whitespace but the space, no accent, no Chinese character), so the copy
    keeps just the lowercasing (if any) and everything else as it was.

    Example:
        >>> from sbert.hub import bundled_model_path
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
