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
