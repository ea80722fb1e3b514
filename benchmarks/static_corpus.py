"""Write the local fitting corpus for ``sbert distill static --corpus``: the SentEval transfer, SNLI dev
and STSb train sentences of the shared data directory, one per line, deduplicated, without any
sentence of the test sets sbert reports (STSb test, STS12-16, SICK test, SNLI test: the snli-proxy
retrieval set is made of it) or of the STSb dev set we tune on.

    python benchmarks/static_corpus.py OUT.txt   # $SBERT_DATA: the data directory
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path


def _lines(path: Path) -> Iterator[str]:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # TREC's files (the data README says so)
    for line in text.splitlines():
        if line.strip():
            yield line.strip()


def training_sentences(data: Path) -> Iterator[str]:
    transfer = data / "senteval_transfer"
    for name in ("CR/custrev", "MPQA/mpqa", "MR/rt-polarity"):
        for side in ("neg", "pos"):
            yield from _lines(transfer / f"{name}.{side}")
    for side in ("objective", "subjective"):
        yield from _lines(transfer / f"SUBJ/subj.{side}")
    yield from (line.rsplit("\t", 1)[0] for line in _lines(transfer / "SST/binary/sentiment-train"))
    yield from (line.split(" ", 1)[1] for line in _lines(transfer / "TREC/train_5500.label"))
    for line in list(_lines(transfer / "MRPC/msr_paraphrase_train.txt"))[1:]:
        yield from line.split("\t")[3:5]
    for part in ("s1.dev", "s2.dev"):
        yield from _lines(data / "snli_senteval" / part)
    for line in _lines(data / "stsb/original/sts-train.csv"):
        yield from line.split("\t")[5:7]


def held_out(data: Path) -> set[str]:
    """Every sentence of the sets sbert reports or tunes on, lower-cased."""
    texts: set[str] = set()
    for split in ("sts-dev.csv", "sts-test.csv"):
        for line in _lines(data / "stsb/original" / split):
            texts.update(field.lower() for field in line.split("\t")[5:7])
    for folder in (data / "sts12-16").glob("**/"):
        for file in folder.glob("*input*.txt"):
            for line in _lines(file):
                texts.update(field.lower() for field in line.split("\t")[:2])
    for line in _lines(data / "sick/senteval/SICK_test_annotated.txt"):
        texts.update(field.lower() for field in line.split("\t")[1:3])
    for part in ("s1.test", "s2.test"):  # sbert evaluate retrieval snli-proxy
        texts.update(line.lower() for line in _lines(data / "snli_senteval" / part))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    data = Path(os.environ.get("SBERT_DATA", "../shared/data"))
    args = parser.parse_args()
    excluded = held_out(data)
    seen: set[str] = set()
    kept = []
    for sentence in training_sentences(data):
        if sentence not in seen and sentence.lower() not in excluded:
            seen.add(sentence)
            kept.append(sentence)
    Path(args.output).write_text("\n".join(kept) + "\n", encoding="utf-8")
    print(f"{len(kept)} sentences ({len(excluded)} held-out sentences excluded) -> {args.output}")


if __name__ == "__main__":
    main()
