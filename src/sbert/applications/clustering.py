"""Clustering sentence vectors: agglomerative (as in the paper), k-means, and community detection.

All three work on cosine similarity. Agglomerative and k-means give every sentence a label;
community detection finds only the dense groups (at least ``min_community_size`` sentences whose
similarity to a centre sentence is at least ``threshold``) and leaves the rest unassigned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist

from sbert.embeddings.search import as_numpy, top_k_rows
from sbert.embeddings.similarity import ArrayLike

if TYPE_CHECKING:
    from sbert.index import VectorIndex

LINKAGES = ("average", "complete", "single")
SMALL_KMEANS = 50_000  # beyond this many vectors, k-means runs on mini-batches in bounded memory
MINIBATCH_EPOCHS = 3


def agglomerative(
    embeddings: ArrayLike,
    n_clusters: int | None = None,
    threshold: float | None = None,
    linkage_method: str = "average",
) -> np.ndarray:
    """Hierarchical clustering on cosine distance; cut into ``n_clusters`` or at a similarity ``threshold``.

    Builds the full pairwise distance list (n·(n−1)/2 floats): fine to ~20k sentences.

    Args:
        embeddings: (n, dim).
        n_clusters: Number of clusters; or
        threshold: Merge only clusters whose (linkage) cosine similarity is at least this, in [-1, 1].
        linkage_method: ``"average"`` (default), ``"complete"`` or ``"single"``.

    Returns:
        Labels (n,), 0-based, numbered by first appearance.

    Examples:
        >>> vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
        >>> agglomerative(vectors, n_clusters=2).tolist()
        [0, 0, 1]
    """
    if (n_clusters is None) == (threshold is None):
        raise ValueError("give exactly one of n_clusters and threshold")
    if linkage_method not in LINKAGES:
        raise ValueError(f"unknown linkage {linkage_method!r}; choose one of {', '.join(LINKAGES)}")
    vectors = _checked(embeddings)
    if len(vectors) == 1:
        return np.zeros(1, dtype=np.int64)
    if n_clusters is not None and not 1 <= n_clusters <= len(vectors):
        raise ValueError(f"n_clusters must be between 1 and {len(vectors)}, got {n_clusters}")
    distances = np.clip(pdist(vectors, metric="cosine"), 0.0, 2.0)  # condensed (n·(n−1)/2,)
    tree = linkage(distances, method=linkage_method)
    if n_clusters is not None:
        labels = fcluster(tree, t=n_clusters, criterion="maxclust")
    else:
        assert threshold is not None
        labels = fcluster(tree, t=1.0 - check_threshold(threshold), criterion="distance")
    return renumber(labels)


def kmeans(
    embeddings: ArrayLike,
    n_clusters: int,
    seed: int = 0,
    n_init: int = 10,
    batch_size: int = 65_536,
) -> np.ndarray:
    """k-means on unit-length vectors (spherical in effect), with scikit-learn.

    Up to :data:`SMALL_KMEANS` vectors: ``KMeans`` (Lloyd, best of ``n_init`` k-means++ starts).
    Beyond: ``MiniBatchKMeans`` fed ``batch_size`` rows at a time for :data:`MINIBATCH_EPOCHS`
    passes, then labels assigned chunk by chunk, so a memory-mapped ``.npy`` of millions of vectors
    is never loaded whole (memory: one chunk plus the labels).

    Examples:
        >>> vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
        >>> kmeans(vectors, n_clusters=2).tolist()
        [0, 0, 1, 1]
    """
    from sklearn.cluster import KMeans, MiniBatchKMeans

    count = len(embeddings)
    if count == 0 or np.ndim(embeddings) != 2:
        raise ValueError(f"clustering needs a non-empty (n, dim) matrix, got shape {np.shape(embeddings)}")
    if not 1 <= n_clusters <= count:
        raise ValueError(f"n_clusters must be between 1 and {count}, got {n_clusters}")
    if count <= SMALL_KMEANS:
        vectors = _unit(_checked(embeddings))
        labels = KMeans(n_clusters, n_init=n_init, random_state=seed).fit_predict(vectors)
        return renumber(labels)
    batch_size = max(batch_size, 3 * n_clusters)  # k-means++ starts on the first batch
    model = MiniBatchKMeans(n_clusters, random_state=seed, batch_size=batch_size, n_init=3)
    for _ in range(MINIBATCH_EPOCHS):
        for start in range(0, count, batch_size):
            model.partial_fit(_unit(_checked(embeddings[start : start + batch_size])))
    labels = np.empty(count, dtype=np.int64)
    for start in range(0, count, batch_size):
        labels[start : start + batch_size] = model.predict(
            _unit(_checked(embeddings[start : start + batch_size]))
        )
    return renumber(labels)


def community_detection(
    embeddings: ArrayLike,
    threshold: float = 0.75,
    min_community_size: int = 10,
    batch_size: int = 1024,
) -> list[list[int]]:
    """Groups of sentences with cosine similarity ≥ ``threshold`` to a centre sentence; non-overlapping.

    Each sentence with at least ``min_community_size`` neighbours (itself included) above the threshold
    proposes a community; the largest are kept first, and a sentence goes to one community only.
    Scores are computed ``batch_size`` rows at a time (no n × n matrix), as sentence-transformers'
    ``util.community_detection`` computes them: in the input's floating type (float32 vectors in
    float32), against the threshold as a float32 tensor, so the same communities come out, at
    ``threshold=1.0`` too (a float32 duplicate's cosine may be 0.99999988, below it).

    Returns:
        Communities, largest first; each lists its centre first, then members by similarity.

    Examples:
        >>> vectors = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]])
        >>> community_detection(vectors, threshold=0.9, min_community_size=2)
        [[0, 1]]
    """
    check_threshold(threshold)
    if min_community_size < 1:
        raise ValueError(f"min_community_size must be at least 1, got {min_community_size}")
    vectors = torch.nn.functional.normalize(_float_matrix(embeddings), dim=1)
    n = len(vectors)
    if n < min_community_size:
        return []
    # sentence-transformers' torch.tensor(threshold): float32, so 0.9 is float32's 0.9 whatever the
    # vectors' type (comparing with a 0-dim tensor keeps the scores' type).
    limit = torch.tensor(threshold, dtype=torch.float32)
    candidates: list[tuple[int, list[int]]] = []
    for start in range(0, n, batch_size):
        scores = vectors[start : start + batch_size] @ vectors.T  # (batch, n)
        # The min_community_size-th best score says at once whether a row can be a centre.
        kth = torch.topk(scores, min_community_size, dim=1).values[:, -1]
        for row in (kth >= limit).nonzero().flatten().tolist():
            above = int((scores[row] >= limit).sum())
            _, members = top_k_rows(scores[row : row + 1], above)
            candidates.append((start + row, members[0].tolist()))
    return _non_overlapping(candidates, min_community_size)


def community_detection_in_index(
    index: VectorIndex,
    embeddings: ArrayLike,
    threshold: float = 0.75,
    min_community_size: int = 10,
    max_community_size: int = 1000,
    batch_size: int = 1024,
) -> list[list[int]]:
    """:func:`community_detection` over a vector index: each sentence's neighbours come from a search.

    Cost grows with n × (one search), not n², and memory with one batch: the corpus vectors
    (``embeddings``, in index order, e.g. a memory-mapped ``.npy``) are read ``batch_size`` rows at
    a time. With an approximate index a community may miss a few members; a community is capped at
    ``max_community_size`` members (the neighbours one search returns).

    Returns:
        Communities of corpus ids (as the index holds them), largest first; centre first.

    Examples:
        >>> from sbert.index import VectorIndex
        >>> vectors = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]], dtype=np.float32)
        >>> community_detection_in_index(VectorIndex.build(vectors, kind="flat"), vectors, 0.9, 2)
        [[0, 1]]
    """
    threshold = check_threshold(threshold)
    if min_community_size < 1 or max_community_size < min_community_size:
        raise ValueError(
            f"need 1 ≤ min_community_size ≤ max_community_size, got {min_community_size} and {max_community_size}"
        )
    if len(embeddings) != len(index):
        raise ValueError(
            f"{len(embeddings)} vectors given for an index of {len(index)}: give its vectors in its order"
        )
    candidates: list[tuple[int, list[int]]] = []
    top_k = min(max_community_size, len(index))
    for start in range(0, len(index), batch_size):
        rows = index.search(as_numpy(embeddings[start : start + batch_size]), top_k=top_k)
        for offset, hits in enumerate(rows):
            members = [h.corpus_id for h in hits if h.score >= threshold]
            if len(members) >= min_community_size:
                candidates.append((int(index.ids[start + offset]), members))
    return _non_overlapping(candidates, min_community_size)


def _non_overlapping(candidates: list[tuple[int, list[int]]], min_community_size: int) -> list[list[int]]:
    """Communities from ``(centre, members by similarity)`` candidates, as sentence-transformers keeps
    them: largest candidate first (equal sizes: the lower centre first); one whose centre is taken
    already is dropped; the others keep their members not yet taken, if ``min_community_size`` are
    left, the centre first. Largest first again at the end (taken members shrink some)."""
    candidates.sort(key=lambda candidate: len(candidate[1]), reverse=True)  # stable
    taken: set[int] = set()
    communities = []
    for centre, members in candidates:
        if centre in taken:
            continue
        fresh = [m for m in members if m not in taken]
        if len(fresh) >= min_community_size:
            community = [centre, *(m for m in fresh if m != centre)]
            communities.append(community)
            taken.update(community)
    return sorted(communities, key=len, reverse=True)


def check_threshold(threshold: float) -> float:
    """A cosine similarity threshold must lie in [-1, 1]."""
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold is a cosine similarity and must be in [-1, 1], got {threshold}")
    return float(threshold)


def renumber(labels: np.ndarray) -> np.ndarray:
    """Labels 0, 1, 2, ... in order of first appearance."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inverse].astype(np.int64)


def labels_to_clusters(labels: np.ndarray) -> list[list[int]]:
    """Member positions of each label, label 0 first."""
    return (
        [np.flatnonzero(labels == label).tolist() for label in range(int(labels.max()) + 1)]
        if len(labels)
        else []
    )


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _float_matrix(embeddings: ArrayLike) -> torch.Tensor:
    """The (n, dim) vectors as a CPU tensor of their own floating type (other types: float32)."""
    tensor = (
        embeddings.detach().cpu()
        if isinstance(embeddings, torch.Tensor)
        else torch.as_tensor(np.asarray(embeddings))
    )
    if tensor.dim() != 2 or len(tensor) == 0:
        raise ValueError(f"clustering needs a non-empty (n, dim) matrix, got shape {tuple(tensor.shape)}")
    return tensor if tensor.is_floating_point() else tensor.float()


def _checked(embeddings: ArrayLike) -> np.ndarray:
    vectors = as_numpy(embeddings)
    if vectors.ndim != 2 or len(vectors) == 0:
        raise ValueError(f"clustering needs a non-empty (n, dim) matrix, got shape {vectors.shape}")
    return vectors.astype(np.float64)
