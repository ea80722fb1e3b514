"""Data: where the evaluation and training sets live, and readers that turn their files into records."""

from sbert.data.paths import DATA_ENV, resolve_data_dir
from sbert.data.readers import DataFormatError, ScoredPair, read_stsb

__all__ = ["DATA_ENV", "DataFormatError", "ScoredPair", "read_stsb", "resolve_data_dir"]
