"""Data: where the evaluation and training sets live, and readers that turn their files into records."""

from sbert.data.paths import DATA_ENV, resolve_data_dir
from sbert.data.readers import DataFormatError, read_snli_senteval, read_stsb
from sbert.data.records import NLI_LABELS, LabeledPair, LabeledSentence, ScoredPair, Triplet

__all__ = [
    "DATA_ENV",
    "NLI_LABELS",
    "DataFormatError",
    "LabeledPair",
    "LabeledSentence",
    "ScoredPair",
    "Triplet",
    "read_snli_senteval",
    "read_stsb",
    "resolve_data_dir",
]
