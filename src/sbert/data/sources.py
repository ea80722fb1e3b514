"""Where each data set is published, and where its files go in the data directory.

The table :data:`SOURCES` that :mod:`sbert.data.download` fetches: the paper's evaluation data from
the addresses SentEval's ``get_transfer_data.bash`` uses, and BEIR's small public retrieval sets
from the BEIR authors' server (fetched only when named).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Source:
    """One published file and where its contents go in the data directory.

    ``members`` maps a path inside the archive (or ``""`` for a plain file) to a path in the data
    directory; ``convert``, when set, turns the archive into those files itself. ``default`` sources
    are fetched when no data set is named (the paper's); the others only when named.
    """

    dataset: str
    url: str
    members: dict[str, str] = field(default_factory=dict)
    convert: Callable[[dict[str, bytes]], dict[str, bytes]] | None = None
    default: bool = True

    @property
    def name(self) -> str:
        return PurePosixPath(self.url).name


def _snli(files: dict[str, bytes]) -> dict[str, bytes]:
    """SNLI's tab-separated release → SentEval's ``s1``/``s2``/``labels`` files (as its script does).

    Columns 1, 6 and 7 (gold label, sentence 1, sentence 2); the header and pairs without a gold
    label (``-``) are dropped.
    """
    out = {}
    for split in ("dev", "test"):  # what SentEval evaluates; training reads SNLI's own files
        text = files[f"snli_1.0/snli_1.0_{split}.txt"].decode("utf-8")
        rows = [line.split("\t") for line in text.splitlines()[1:] if line.strip()]
        rows = [row for row in rows if row[0] != "-"]
        for name, column in (("labels", 0), ("s1", 5), ("s2", 6)):
            out[f"snli_senteval/{name}.{split}"] = "".join(row[column] + "\n" for row in rows).encode("utf-8")
    return out


def _sts(year: str, url: str, folder: str, subsets: tuple[str, ...], prefix: str = "STS") -> Source:
    members = {}
    for subset in subsets:
        for kind in ("input", "gs"):
            name = f"{prefix}.{kind}.{subset}.txt"
            members[f"{folder}/{name}"] = f"sts12-16/original/{year}-en-test/{name}"
    return Source(year, url, members)


def _beir(dataset: str, folder: str, splits: tuple[str, ...]) -> Source:
    """A BEIR set as its authors publish it: ``<folder>.zip`` holding ``<folder>/corpus.jsonl``,
    ``queries.jsonl`` and ``qrels/<split>.tsv``, into ``beir/<folder>/`` unchanged."""
    names = ["corpus.jsonl", "queries.jsonl", *(f"qrels/{split}.tsv" for split in splits)]
    members = {f"{folder}/{name}": f"{BEIR_DIR}/{folder}/{name}" for name in names}
    return Source(dataset, f"{_BEIR}/{folder}.zip", members, default=False)


BEIR_DIR = "beir"  # BEIR sets land in DATA/beir/<name>/
_BEIR = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets"
_STS = "http://ixa2.si.ehu.es/stswiki/images"
_SICK = "http://alt.qcri.org/semeval2014/task1/data/uploads"
_NB = "data"  # folder inside datasmall_NB_ACL12.zip

SOURCES: tuple[Source, ...] = (
    Source(
        "STSb",
        f"{_STS}/4/48/Stsbenchmark.tar.gz",
        {
            f"stsbenchmark/sts-{split}.csv": f"stsb/original/sts-{split}.csv"
            for split in ("train", "dev", "test")
        },
    ),
    *(
        Source("SICK", f"{_SICK}/sick_{split}.zip", {f"SICK_{split}.txt": f"sick/senteval/SICK_{split}.txt"})
        for split in ("train", "trial", "test_annotated")
    ),
    _sts(
        "STS12",
        f"{_STS}/4/40/STS2012-en-test.zip",
        "test-gold",
        ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    ),
    _sts("STS13", f"{_STS}/2/2f/STS2013-en-test.zip", "test-gs", ("FNWN", "headlines", "OnWN")),
    _sts(
        "STS14",
        f"{_STS}/8/8c/STS2014-en-test.zip",
        "sts-en-test-gs-2014",
        ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    ),
    _sts(
        "STS15",
        f"{_STS}/d/da/STS2015-en-test.zip",
        "test_evaluation_task2a",
        ("answers-forums", "answers-students", "belief", "headlines", "images"),
    ),
    _sts(
        "STS16",
        f"{_STS}/9/98/STS2016-en-test.zip",
        "sts2016-english-with-gs-v1.0",
        ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
        prefix="STS2016",
    ),
    Source(
        "SNLI",
        "https://nlp.stanford.edu/projects/snli/snli_1.0.zip",
        {f"snli_senteval/{name}.{split}": "" for name in ("s1", "s2", "labels") for split in ("dev", "test")},
        convert=_snli,
    ),
    Source(
        "SentEval",
        "https://s3.amazonaws.com/senteval/senteval_data/datasmall_NB_ACL12.zip",
        {
            f"{_NB}/rt10662/rt-polarity.pos": "senteval_transfer/MR/rt-polarity.pos",
            f"{_NB}/rt10662/rt-polarity.neg": "senteval_transfer/MR/rt-polarity.neg",
            f"{_NB}/customerr/custrev.pos": "senteval_transfer/CR/custrev.pos",
            f"{_NB}/customerr/custrev.neg": "senteval_transfer/CR/custrev.neg",
            f"{_NB}/subj/subj.subjective": "senteval_transfer/SUBJ/subj.subjective",
            f"{_NB}/subj/subj.objective": "senteval_transfer/SUBJ/subj.objective",
            f"{_NB}/mpqa/mpqa.pos": "senteval_transfer/MPQA/mpqa.pos",
            f"{_NB}/mpqa/mpqa.neg": "senteval_transfer/MPQA/mpqa.neg",
        },
    ),
    *(
        Source(
            "SentEval",
            f"https://raw.githubusercontent.com/PrincetonML/SIF/master/data/sentiment-{split}",
            {"": f"senteval_transfer/SST/binary/sentiment-{split}"},
        )
        for split in ("train", "dev", "test")
    ),
    *(
        Source(
            "SentEval",
            f"https://raw.githubusercontent.com/AcademiaSinicaNLPLab/sentiment_dataset/master/data/stsa.fine.{split}",
            {"": f"senteval_transfer/SST/fine/sentiment-{split}"},
        )
        for split in ("train", "dev", "test")
    ),
    *(
        Source(
            "SentEval",
            f"http://cogcomp.cs.illinois.edu/Data/QA/QC/{name}.label",
            {"": f"senteval_transfer/TREC/{name}.label"},
        )
        for name in ("train_5500", "TREC_10")
    ),
    *(
        Source(
            "SentEval",
            f"https://s3.amazonaws.com/senteval/senteval_data/msr_paraphrase_{split}.txt",
            {"": f"senteval_transfer/MRPC/msr_paraphrase_{split}.txt"},
        )
        for split in ("train", "test")
    ),
    _beir("SciFact", "scifact", ("train", "test")),
    _beir("NFCorpus", "nfcorpus", ("train", "dev", "test")),
)
DATASETS = tuple(dict.fromkeys(source.dataset for source in SOURCES))
DEFAULT_DATASETS = tuple(dict.fromkeys(source.dataset for source in SOURCES if source.default))
BEIR_SETS = {
    source.url.rpartition("/")[2].removesuffix(".zip"): source.dataset
    for source in SOURCES
    if not source.default
}
