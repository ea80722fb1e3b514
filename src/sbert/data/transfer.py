"""Readers for the SentEval transfer tasks: MR, CR, SUBJ, MPQA, SST-2, TREC and MRPC.

Each returns plain records: :class:`LabeledSentence` for the single-sentence tasks and
:class:`LabeledPair` for MRPC (label ``"1"``: paraphrase). The files are SentEval's copies.
"""

from __future__ import annotations

from pathlib import Path

from sbert.data.errors import BadLines, DataFormatError
from sbert.data.paths import dataset_file
from sbert.data.records import LabeledPair, LabeledSentence

# Binary tasks stored as one file per class: {task: ((file, label), (file, label))}.
BINARY_TASK_FILES: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "MR": (("MR/rt-polarity.pos", "positive"), ("MR/rt-polarity.neg", "negative")),
    "CR": (("CR/custrev.pos", "positive"), ("CR/custrev.neg", "negative")),
    "SUBJ": (("SUBJ/subj.objective", "objective"), ("SUBJ/subj.subjective", "subjective")),
    "MPQA": (("MPQA/mpqa.pos", "positive"), ("MPQA/mpqa.neg", "negative")),
}
SST_SPLITS = ("train", "dev", "test")
TREC_SPLITS = {"train": "train_5500.label", "test": "TREC_10.label"}
TREC_LABELS = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
MRPC_SPLITS = {"train": "msr_paraphrase_train.txt", "test": "msr_paraphrase_test.txt"}


def read_binary_task(
    task: str, data_dir: str | Path | None = None, keep_blank_lines: bool = False
) -> list[LabeledSentence]:
    """MR, CR, SUBJ or MPQA: every sentence of both class files, labelled by its file.

    Blank lines (CR and MPQA have a few) are skipped, or with ``keep_blank_lines`` kept as empty
    sentences, as SentEval keeps them.

    Examples:
        >>> data = read_binary_task("MR", "../shared/data")
        >>> len(data), data[0].label
        (10662, 'positive')
    """
    if task not in BINARY_TASK_FILES:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(BINARY_TASK_FILES)}")
    sentences: list[LabeledSentence] = []
    for relative, label in BINARY_TASK_FILES[task]:
        path = dataset_file(data_dir, f"senteval_transfer/{relative}", task)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        sentences.extend(
            LabeledSentence(line.strip(), label) for line in lines if keep_blank_lines or line.strip()
        )
    return sentences


def read_sst2(
    split: str = "train", data_dir: str | Path | None = None, skip_bad_lines: bool = False
) -> list[LabeledSentence]:
    """SST-2 (binary): ``sentence TAB label`` with label 0 (negative) or 1 (positive)."""
    if split not in SST_SPLITS:
        raise ValueError(f"unknown SST-2 split {split!r}; choose one of {', '.join(SST_SPLITS)}")
    path = dataset_file(data_dir, f"senteval_transfer/SST/binary/sentiment-{split}", f"SST-2 {split}")
    sentences = []
    with BadLines(path, skip_bad_lines) as bad:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            fields = line.split("\t")
            if len(fields) != 2:
                bad.found(number, f"expected 2 tab-separated fields, got {len(fields)}")
            elif fields[1].strip() not in ("0", "1"):
                bad.found(number, f"label {fields[1]!r} is not 0 or 1")
            elif not fields[0].strip():
                bad.found(number, "empty sentence")
            else:
                sentences.append(LabeledSentence(fields[0].strip(), fields[1].strip()))
    return sentences


def read_trec(
    split: str = "train", data_dir: str | Path | None = None, skip_bad_lines: bool = False
) -> list[LabeledSentence]:
    """TREC question types: ``COARSE:fine question`` per line, labelled by the 6 coarse classes.

    The files are Latin-1, not UTF-8.
    """
    if split not in TREC_SPLITS:
        raise ValueError(f"unknown TREC split {split!r}; choose one of {', '.join(TREC_SPLITS)}")
    path = dataset_file(data_dir, f"senteval_transfer/TREC/{TREC_SPLITS[split]}", f"TREC {split}")
    sentences = []
    with BadLines(path, skip_bad_lines) as bad:
        for number, line in enumerate(path.read_text(encoding="latin-1").splitlines(), start=1):
            label, _, rest = line.partition(":")
            _, _, question = rest.partition(" ")
            if label not in TREC_LABELS:
                bad.found(number, f"label {label!r} is not one of {', '.join(TREC_LABELS)}")
            elif not question.strip():
                bad.found(number, "no question after the label")
            else:
                sentences.append(LabeledSentence(question.strip(), label))
    return sentences


def read_mrpc(
    split: str = "train", data_dir: str | Path | None = None, skip_bad_lines: bool = False
) -> list[LabeledPair]:
    """MRPC sentence pairs, label ``"1"`` for a paraphrase, ``"0"`` otherwise.

    Tab-separated with a header (``Quality, #1 ID, #2 ID, #1 String, #2 String``) and a byte-order mark.
    """
    if split not in MRPC_SPLITS:
        raise ValueError(f"unknown MRPC split {split!r}; choose one of {', '.join(MRPC_SPLITS)}")
    path = dataset_file(data_dir, f"senteval_transfer/MRPC/{MRPC_SPLITS[split]}", f"MRPC {split}")
    pairs = []
    with BadLines(path, skip_bad_lines) as bad:
        for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
            fields = line.split("\t")
            if number == 1:
                if fields[0] != "Quality":
                    raise DataFormatError(path, 1, f"not an MRPC header: {line[:80]!r}")
                continue
            if len(fields) != 5:
                bad.found(number, f"expected 5 tab-separated fields, got {len(fields)}")
            elif fields[0] not in ("0", "1"):
                bad.found(number, f"label {fields[0]!r} is not 0 or 1")
            elif not fields[3].strip() or not fields[4].strip():
                bad.found(number, "empty sentence")
            else:
                pairs.append(LabeledPair(fields[3], fields[4], fields[0]))
    return pairs
