"""How an index is built: the settings :meth:`VectorIndex.build <sbert.index.VectorIndex.build>`
(vectors in memory) and :func:`~sbert.index.building.build_index` (vectors on disk) share."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sbert.embeddings.identity import ModelIdentity


@dataclass(frozen=True)
class IndexOptions:
    """The settings both index builders take, by keyword or as one object.

    Attributes:
        kind: An index kind (:data:`~sbert.index.kinds.INDEX_KINDS`) or ``"auto"``: chosen by size
            and ``max_memory`` (:func:`~sbert.index.kinds.choose_kind`), the reason in ``index.choice``.
        metric: ``"cosine"`` (vectors normalised on the way in, then inner product) or ``"dot"``.
        params: FAISS parameters over the kind's defaults (:func:`~sbert.index.kinds.default_params`).
        identity: The model's identity (:func:`sbert.embeddings.identity.model_identity`); a load
            with a model refuses any other model or pipeline.
        rescore: Compressed kinds: the precision candidates are re-scored in, ``"int8"``,
            ``"float16"``, ``"float32"`` or ``None`` (the compressed index's own coarse scores).
        max_memory: Bytes the index may take when served (``kind="auto"`` only).
        show_progress_bar: A bar over the vectors added.
        dimensions: Index only the first so many of each vector, unit length again (a Matryoshka
            prefix; the index records the model's full size as ``truncated_from``).

    Examples:
        >>> import numpy as np
        >>> from sbert.index import VectorIndex
        >>> vectors = np.random.default_rng(0).normal(size=(50, 8)).astype("float32")
        >>> options = IndexOptions(kind="flat", dimensions=4)
        >>> VectorIndex.build(vectors, options=options).dim
        4
        >>> VectorIndex.build(vectors, options=options, dimensions=6).dim  # a keyword wins
        6
    """

    kind: str = "auto"
    metric: str = "cosine"
    params: dict[str, int] | None = None
    identity: ModelIdentity | None = None
    rescore: str | None = "int8"
    max_memory: int | None = None
    show_progress_bar: bool = False
    dimensions: int | None = None

    @classmethod
    def of(cls, options: IndexOptions | None, keywords: dict[str, Any]) -> IndexOptions:
        """``options`` (default: the defaults) with the builder's keyword arguments over it.

        Raises:
            TypeError: a keyword that is no setting (the builders' own error for an unknown keyword).
        """
        unknown = sorted(set(keywords) - {field.name for field in fields(cls)})
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r} (IndexOptions has no such setting)")
        return replace(options or cls(), **keywords)
