"""Training objectives; each one owns the shared encoder, so siamese and triplet weights are tied.

The paper's three: :class:`SoftmaxLoss` (classification), :class:`CosineMSELoss` (regression) and
:class:`TripletLoss`; beyond the paper: :class:`MultipleNegativesRankingLoss` (and its GradCache form,
:class:`CachedMultipleNegativesRankingLoss`), :class:`CoSENTLoss`, and :class:`MatryoshkaLoss` around any of them. Sparse encoders (SPLADE):
:class:`SpladeLoss` (a ranking loss plus :class:`FlopsLoss` regularisation of queries and documents)
around :class:`SparseMultipleNegativesRankingLoss`.
"""

from sbert.base.options import TRIPLET_DISTANCES
from sbert.losses.base import SentenceLoss
from sbert.losses.cached_multiple_negatives import CachedMultipleNegativesRankingLoss
from sbert.losses.cosent import CoSENTLoss
from sbert.losses.cosine_mse import CosineMSELoss
from sbert.losses.flops import FlopsLoss
from sbert.losses.matryoshka import MatryoshkaLoss
from sbert.losses.multiple_negatives import MultipleNegativesRankingLoss
from sbert.losses.softmax import CONCATENATION_PARTS, PAPER_CONCATENATION, SoftmaxLoss
from sbert.losses.sparse_base import SparseLoss
from sbert.losses.sparse_multiple_negatives import SparseMultipleNegativesRankingLoss
from sbert.losses.splade import RegularizerWarmup, SpladeLoss
from sbert.losses.triplet import TripletLoss

__all__ = [
    "CONCATENATION_PARTS",
    "PAPER_CONCATENATION",
    "TRIPLET_DISTANCES",
    "CachedMultipleNegativesRankingLoss",
    "CoSENTLoss",
    "CosineMSELoss",
    "FlopsLoss",
    "MatryoshkaLoss",
    "MultipleNegativesRankingLoss",
    "RegularizerWarmup",
    "SentenceLoss",
    "SoftmaxLoss",
    "SparseLoss",
    "SparseMultipleNegativesRankingLoss",
    "SpladeLoss",
    "TripletLoss",
]
