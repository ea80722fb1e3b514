"""sentence-transformers' model methods on sbert's encoders, with the same names and meaning.

:class:`~sbert.SentenceEncoder` (and so ``sbert.SentenceTransformer``) inherits these, so code
written for sentence-transformers runs with ``sentence_transformers`` changed to ``sbert`` in its
imports (docs/guides/coming-from-st.md). Scores come from :mod:`sbert.util`: torch tensors, as
sentence-transformers returns them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from torch import Tensor

from sbert.base import json_text
from sbert.base.options import METRICS, choice

ArrayLike = Tensor | np.ndarray

# The backends of sentence-transformers' constructor that sbert runs (and sbert's "auto").
ST_BACKENDS = ("torch", "openvino", "auto")


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

    def save_pretrained(self, path: str | Path, *args: Any, **kwargs: Any) -> None:
        """:meth:`save` (sentence-transformers' other name); model cards are not written."""
        self.save(path)

    def save_similarity_fn_name(self, path: str | Path) -> None:
        """Record :attr:`similarity_fn_name` in a saved model's ``config_sentence_transformers.json``."""
        config_file = Path(path) / "config_sentence_transformers.json"
        if self._similarity_fn_name is None or not config_file.is_file():
            return
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config["similarity_fn_name"] = self._similarity_fn_name
        config_file.write_text(json_text.dumps(config, indent=2) + "\n", encoding="utf-8")


class LoadsByName(type):
    """``SentenceEncoder("name or path", device=...)`` loads, as ``SentenceTransformer(...)`` does."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else kwargs.get("model_name_or_path")
        if isinstance(first, str | Path):
            kwargs.pop("model_name_or_path", None)
            return load_as_sentence_transformer(cls, first, *args[1:], **kwargs)
        return super().__call__(*args, **kwargs)


def saved_similarity_fn_name(path: Path) -> str | None:
    """The ``similarity_fn_name`` a saved model's ``config_sentence_transformers.json`` names, if any."""
    config_file = path / "config_sentence_transformers.json"
    if not config_file.is_file():
        return None
    name = json.loads(config_file.read_text(encoding="utf-8")).get("similarity_fn_name")
    return name if isinstance(name, str) else None


def load_as_sentence_transformer(
    cls: Any,
    name_or_path: str | Path | None,
    device: str | None = None,
    prompts: Mapping[str, str] | None = None,
    default_prompt_name: str | None = None,
    truncate_dim: int | None = None,
    backend: str = "auto",
    model_kwargs: Mapping[str, Any] | None = None,
    **sbert_options: Any,
) -> Any:
    """``SentenceTransformer(name_or_path, device=..., ...)``: :meth:`from_pretrained`, then the
    constructor's prompts and ``truncate_dim`` (sentence-transformers' meaning).

    Raises:
        ValueError: ``backend="onnx"``, a ``model_kwargs`` key, or a ``default_prompt_name`` not
            among the prompts.
    """
    from sbert.encoder.prompts import Prompts

    if backend not in ST_BACKENDS:
        raise ValueError(f"backend={backend!r}: sbert runs on torch or openvino (or auto), not {backend}")
    if model_kwargs:
        raise ValueError(
            f"model_kwargs {sorted(model_kwargs)} are not available in sbert: it loads float32 weights "
            "and picks its compute precision with precision= (from_pretrained) or compute_precision= (encode)"
        )
    model = cls.from_pretrained(name_or_path, device=device, backend=backend, **sbert_options)
    if prompts is not None or default_prompt_name is not None:
        named = {**model.prompts.named, **(prompts or {})}
        model.prompts = Prompts(named, default_prompt_name or model.prompts.default_name)
    model.truncate_dim = truncate_dim
    return model
