"""Distil a static model from any sbert model: token vectors from the teacher, PCA, frequency weights.

Every vocabulary token goes through the teacher alone (``[CLS] token [SEP]``, the teacher's own
pooling and Dense layers), the table is reduced by PCA to the chosen dimensions, and each row is
scaled by a SIF weight ``a / (a + p(token))`` where ``p`` is a Zipf estimate from the token's rank in
the vocabulary (the recipe model2vec published; our own code). :mod:`sbert.static.fit` then trains the
table on the user's sentences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from sbert.encoder.model import SentenceEncoder
from sbert.modules import Normalize
from sbert.static.encoder import StaticEncoder

# Tokens that never occur in text and would only pull the PCA: BERT's reserved [unusedN] slots.
UNUSED_TOKEN = re.compile(r"\[unused\d+\]")


@dataclass(frozen=True)
class Projection:
    """The PCA fitted on the teacher's token vectors: ``(x - mean) @ components.T`` (dim,) → (dimensions,)."""

    mean: np.ndarray  # (teacher_dim,)
    components: np.ndarray  # (dimensions, teacher_dim)

    def __call__(self, vectors: np.ndarray) -> np.ndarray:
        return (vectors - self.mean) @ self.components.T


def check_dimensions(dimensions: int, teacher_dim: int, teacher: str) -> None:
    """``ValueError`` unless ``2 <= dimensions <= teacher_dim``, naming the teacher."""
    if isinstance(dimensions, bool) or not isinstance(dimensions, int):
        raise TypeError(f"dimensions must be a whole number, got {dimensions!r}")
    if not 2 <= dimensions <= teacher_dim:
        raise ValueError(
            f"dimensions {dimensions} is out of range: between 2 and the teacher's {teacher_dim} "
            f"({teacher} gives {teacher_dim}-dimensional vectors)"
        )


def token_vectors(
    teacher: SentenceEncoder, batch_size: int = 512, show_progress_bar: bool = True
) -> np.ndarray:
    """Each vocabulary token's vector from the teacher, (vocabulary, teacher_dim) float32.

    A token goes through alone, between the special tokens; its vector is the mean of the teacher's
    pooled output and the token's own output vector, then the teacher's Dense layers. The pooled
    output alone (model2vec's choice) scored 79.20 on the STSb dev set for all-MiniLM-L6-v2 at 256
    dimensions, the token's own vector 78.95, their mean 79.86 (a weight of 0.3 or 0.7 on the
    token's own vector: 80.01 and 79.54; we keep the plain mean).
    """
    tokenizer = teacher.transformer.tokenizer
    vocabulary = len(tokenizer)
    first, last = tokenizer.cls_token_id, tokenizer.sep_token_id
    prefix, suffix = [first] if first is not None else [], [last] if last is not None else []
    rows = [[*prefix, i, *suffix] for i in range(vocabulary)]
    out = np.empty((vocabulary, teacher.dim), dtype=np.float32)
    was_training = teacher.training
    teacher.eval()
    try:
        with torch.inference_mode():
            for start in tqdm(
                range(0, vocabulary, batch_size),
                desc="Teacher on tokens",
                unit="batch",
                disable=not show_progress_bar,
            ):
                features = teacher.transformer.collate(rows[start : start + batch_size])
                features = {key: value.to(teacher.device) for key, value in features.items()}
                hidden = teacher.transformer(features)  # (batch, tokens, hidden)
                pooled = teacher.pooling(hidden, features["attention_mask"])  # (batch, hidden)
                vectors = (pooled + hidden[:, len(prefix)]) / 2
                for layer in teacher.layers:
                    # a Normalize layer would erase the length the mean relies on
                    if not isinstance(layer, Normalize):
                        vectors = layer(vectors)
                out[start : start + batch_size] = vectors.float().cpu().numpy()
    finally:
        teacher.train(was_training)
    return out


def fit_pca(vectors: np.ndarray, dimensions: int, rows: np.ndarray) -> Projection:
    """PCA of ``vectors[rows]`` by eigendecomposition of the covariance; signs fixed (deterministic)."""
    sample = vectors[rows].astype(np.float64)
    mean = sample.mean(axis=0)
    centered = sample - mean
    covariance = centered.T @ centered / max(1, len(sample) - 1)  # (dim, dim)
    _, eigenvectors = np.linalg.eigh(covariance)  # ascending eigenvalues
    components = eigenvectors[:, ::-1][:, :dimensions].T  # (dimensions, dim), largest variance first
    # An eigenvector's sign is arbitrary: make each one's largest coordinate positive.
    signs = np.sign(components[np.arange(dimensions), np.abs(components).argmax(axis=1)])
    return Projection(mean.astype(np.float32), (components * signs[:, None]).astype(np.float32))


def zipf_sif_weights(vocabulary: int, coefficient: float = 1e-4) -> np.ndarray:
    """SIF weights ``a / (a + p)`` with ``p`` from Zipf's law on the vocabulary rank (vocabulary,)."""
    inverse_rank = 1.0 / np.arange(2, vocabulary + 2)
    probability = inverse_rank / inverse_rank.sum()
    return (coefficient / (coefficient + probability)).astype(np.float32)


def distill_table(
    teacher: SentenceEncoder,
    dimensions: int = 256,
    sif_coefficient: float = 1e-4,
    show_progress_bar: bool = True,
) -> tuple[SentenceEncoder, Projection]:
    """A static model from ``teacher`` without any text, and the PCA that maps teacher vectors to it.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> static, _ = distill_table(SentenceEncoder.from_pretrained(), dimensions=64, show_progress_bar=False)
        >>> static.encode(["A man plays a guitar."]).shape
        (1, 64)
    """
    check_dimensions(dimensions, teacher.dim, teacher.name)
    vectors = token_vectors(teacher, show_progress_bar=show_progress_bar)  # (vocabulary, teacher_dim)
    hf_tokenizer = teacher.transformer.tokenizer
    tokens = hf_tokenizer.convert_ids_to_tokens(list(range(len(vectors))))
    special = set(hf_tokenizer.all_special_ids)
    used = np.array([i not in special and not UNUSED_TOKEN.fullmatch(t) for i, t in enumerate(tokens)])
    projection = fit_pca(vectors, dimensions, np.flatnonzero(used))
    # Zipf ranks among the tokens that occur in text, in vocabulary order (a WordPiece vocabulary
    # lists frequent tokens first); the others get a zero row, which adds nothing to a mean.
    weights = np.zeros(len(vectors), dtype=np.float32)
    weights[used] = zipf_sif_weights(int(used.sum()), sif_coefficient)
    table = projection(vectors) * weights[:, None]
    tokenizer = hf_tokenizer.backend_tokenizer
    from tokenizers import Tokenizer

    student = StaticEncoder(Tokenizer.from_str(tokenizer.to_str()), table, name=f"static({teacher.name})")
    return student, projection
