"""What sentence vectors are for: semantic search, an index, paraphrase mining and clustering."""

from sbert.applications.clustering import agglomerative, community_detection, kmeans
from sbert.applications.mining import Pair, paraphrase_mining
from sbert.embeddings.search import Hit, semantic_search

__all__ = [
    "Hit",
    "Pair",
    "agglomerative",
    "community_detection",
    "kmeans",
    "paraphrase_mining",
    "semantic_search",
]
