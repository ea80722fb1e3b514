"""Data: where the evaluation and training sets live, and readers that turn their files into records."""

from sbert.data.errors import BadLines, DataFormatError
from sbert.data.nli import distinct_snli_sentences
from sbert.data.paths import DATA_ENV, MissingDataError, resolve_data_dir
from sbert.data.readers import read_snli_senteval, read_stsb
from sbert.data.records import NLI_LABELS, LabeledPair, LabeledSentence, NegativesTuple, ScoredPair, Triplet
from sbert.data.sts import read_sick, read_sts
from sbert.data.transfer import read_binary_task, read_mrpc, read_sst2, read_trec

__all__ = [
    "DATA_ENV",
    "NLI_LABELS",
    "BadLines",
    "DataFormatError",
    "LabeledPair",
    "LabeledSentence",
    "MissingDataError",
    "NegativesTuple",
    "ScoredPair",
    "Triplet",
    "distinct_snli_sentences",
    "read_binary_task",
    "read_mrpc",
    "read_sick",
    "read_snli_senteval",
    "read_sst2",
    "read_sts",
    "read_stsb",
    "read_trec",
    "resolve_data_dir",
]
