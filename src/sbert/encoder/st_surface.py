"""sentence-transformers' model methods on sbert's encoders, with the same names and meaning.

:class:`~sbert.SentenceEncoder` (and so ``sbert.SentenceTransformer``) inherits these, so code
written for sentence-transformers runs with ``sentence_transformers`` changed to ``sbert`` in its
imports (docs/guides/coming-from-st.md). Scores come from :mod:`sbert.util`: torch tensors, as
sentence-transformers returns them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from torch import Tensor

from sbert.base import json_text
from sbert.base.options import METRICS, choice

ArrayLike = Tensor | np.ndarray


class SentenceTransformerMethods:
    """The part of ``SentenceTransformer``'s surface that is not ``encode`` (a mixin).

    Examples:
        >>> from sbert import SentenceTransformer
        >>> model = SentenceTransformer("all-MiniLM-L6-v2", device="cpu")
        >>> vectors = model.encode(["A man plays a guitar.", "Someone plays music."])
        >>> model.similarity(vectors, vectors).shape, model.similarity_fn_name
        (torch.Size([2, 2]), 'cosine')
        >>> model.get_sentence_embedding_dimension()
        384
    """

    _similarity_fn_name: str | None = None
    truncate_dim: int | None = None
    if TYPE_CHECKING:  # what the encoder that mixes this in provides

        @property
        def dim(self) -> int: ...
        def save(self, path: str | Path) -> None: ...
        def token_ids(self, sentences: Sequence[str]) -> Any: ...
        def collate(self, token_ids: Sequence[Sequence[int]]) -> dict[str, Tensor]: ...

    @property
    def similarity_fn_name(self) -> str:
        """What :meth:`similarity` computes: ``cosine`` (default), ``dot``, ``euclidean`` or
        ``manhattan`` (the last two negated distances); read from a saved model's config."""
        return self._similarity_fn_name or "cosine"

    @similarity_fn_name.setter
    def similarity_fn_name(self, name: Any) -> None:
        name = getattr(name, "value", name)  # sentence-transformers' SimilarityFunction enum
        self._similarity_fn_name = None if name is None else choice(name, METRICS, "similarity_fn_name")

    def similarity(self, embeddings1: ArrayLike, embeddings2: ArrayLike) -> Tensor:
        """Scores of every vector of ``embeddings1`` with every one of ``embeddings2``: a (n1, n2) tensor."""
        from sbert.embeddings.similarity import score

        return score(self.similarity_fn_name, embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1: ArrayLike, embeddings2: ArrayLike) -> Tensor:
        """Score of ``embeddings1[i]`` with ``embeddings2[i]`` for each ``i``: a (n,) tensor."""
        from sbert.embeddings.similarity import score

        return score(self.similarity_fn_name, embeddings1, embeddings2, pairwise=True)

    def get_embedding_dimension(self) -> int:
        """The size of ``encode()``'s vectors: :attr:`dim`, or :attr:`truncate_dim` if smaller."""
        return self.dim if self.truncate_dim is None else min(self.dim, self.truncate_dim)

    def get_sentence_embedding_dimension(self) -> int:
        """sentence-transformers' older name of :meth:`get_embedding_dimension`."""
        return self.get_embedding_dimension()

    def tokenize(self, texts: list[str]) -> dict[str, Tensor]:
        """The model's input features of ``texts`` (no prompt added), as sentence-transformers' ``tokenize``:
        padded ``input_ids`` and ``attention_mask`` (a static model: flat ``input_ids`` and ``offsets``)."""
        return self.collate(self.token_ids(list(texts)).ids)

    def save_similarity_fn_name(self, path: str | Path) -> None:
        """Record :attr:`similarity_fn_name` in a saved model's ``config_sentence_transformers.json``."""
        config_file = Path(path) / "config_sentence_transformers.json"
        if self._similarity_fn_name is None or not config_file.is_file():
            return
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config["similarity_fn_name"] = self._similarity_fn_name
        config_file.write_text(json_text.dumps(config, indent=2) + "\n", encoding="utf-8")
