import numpy as np
import pytest

from sbert.applications.clustering import agglomerative, community_detection, kmeans, labels_to_clusters


def blobs(per_blob: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three well-separated directions in 8-d, with small noise."""
    rng = np.random.default_rng(seed)
    centres = np.eye(8)[:3] * 5
    truth = np.repeat(np.arange(3), per_blob)
    vectors = centres[truth] + 0.3 * rng.normal(size=(len(truth), 8))
    order = rng.permutation(len(truth))
    return vectors[order], truth[order]


def same_partition(labels: np.ndarray, truth: np.ndarray) -> bool:
    return {tuple(c) for c in labels_to_clusters(labels)} == {
        tuple(np.flatnonzero(truth == t).tolist()) for t in np.unique(truth)
    }


def test_agglomerative_recovers_blobs_by_count_and_by_threshold() -> None:
    vectors, truth = blobs()
    assert same_partition(agglomerative(vectors, n_clusters=3), truth)
    assert same_partition(agglomerative(vectors, threshold=0.5), truth)
    assert len(set(agglomerative(vectors, threshold=0.999).tolist())) > 3


def test_kmeans_recovers_blobs_and_is_seeded() -> None:
    vectors, truth = blobs()
    labels = kmeans(vectors, n_clusters=3, seed=4)
    assert same_partition(labels, truth)
    assert labels.tolist() == kmeans(vectors, n_clusters=3, seed=4).tolist()


def test_community_detection_finds_blobs_and_skips_outliers() -> None:
    vectors, truth = blobs(per_blob=12)
    outlier = -np.ones((1, 8))
    communities = community_detection(
        np.vstack([vectors, outlier]), threshold=0.8, min_community_size=5, batch_size=7
    )
    assert sorted(sorted(c) for c in communities) == sorted(
        np.flatnonzero(truth == t).tolist() for t in range(3)
    )
    assert all(len(set(c)) == len(c) for c in communities)
    assert community_detection(vectors, threshold=0.8, min_community_size=13) == []


@pytest.mark.parametrize("threshold", [1.5, -1.01])
def test_threshold_outside_cosine_range(threshold: float) -> None:
    vectors, _ = blobs()
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        community_detection(vectors, threshold=threshold)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        agglomerative(vectors, threshold=threshold)


def test_bad_arguments() -> None:
    vectors, _ = blobs()
    with pytest.raises(ValueError, match="exactly one"):
        agglomerative(vectors)
    with pytest.raises(ValueError, match="n_clusters"):
        kmeans(vectors, n_clusters=0)
    with pytest.raises(ValueError, match="non-empty"):
        kmeans(np.empty((0, 3)), n_clusters=1)


def inertia(vectors: np.ndarray, labels: np.ndarray) -> float:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    centres = np.stack([unit[labels == label].mean(axis=0) for label in range(labels.max() + 1)])
    return float(((unit - centres[labels]) ** 2).sum())


def test_kmeans_beats_the_old_best_of_five_scipy_loop() -> None:
    from scipy.cluster.vq import kmeans2

    # Overlapping groups, where a few k-means++ starts land in different local minima.
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(8, 16))[rng.integers(0, 8, 60)] + 0.8 * rng.normal(size=(60, 16))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    old = min(inertia(vectors, kmeans2(unit, 6, minit="++", seed=s)[1]) for s in range(5))
    new = inertia(vectors, kmeans(vectors, n_clusters=6))
    assert new < old - 1e-6


def test_kmeans_in_mini_batches_on_a_memory_map(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sbert.applications.clustering as clustering

    monkeypatch.setattr(clustering, "SMALL_KMEANS", 100)  # the large-corpus path, on a small corpus
    vectors, truth = blobs(per_blob=400)
    np.save(tmp_path / "v.npy", vectors)
    labels = kmeans(np.load(tmp_path / "v.npy", mmap_mode="r"), n_clusters=3, batch_size=256)
    assert same_partition(labels, truth)


def test_community_detection_in_an_index_matches_the_exact_one() -> None:
    pytest.importorskip("faiss")
    from sbert.applications.clustering import community_detection_in_index
    from sbert.index import VectorIndex

    vectors, _ = blobs(per_blob=12)
    vectors = np.vstack([vectors, -np.ones((1, 8))]).astype(np.float32)
    exact = community_detection(vectors, threshold=0.8, min_community_size=5)
    index = VectorIndex.build(vectors, kind="flat", ids=np.arange(len(vectors)) + 100)
    found = community_detection_in_index(index, vectors, threshold=0.8, min_community_size=5, batch_size=7)
    assert sorted(sorted(c) for c in found) == sorted(sorted(m + 100 for m in c) for c in exact)
    with pytest.raises(ValueError, match="in its order"):
        community_detection_in_index(index, vectors[:5])
