"""Retrieval sets in BEIR's layout, and the proxy sets built from the data at hand.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``, after a header line).
Every problem is an error naming the file and the line: a score computed over a query that points at
a document the corpus lacks would be silently deflated, one over duplicate ids silently inflated.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sbert.base import json_text
from sbert.data.errors import BadLines, utf8_lines
from sbert.data.paths import MissingDataError, missing_data_message, resolve_data_dir
from sbert.data.readers import read_snli_senteval, read_stsb
from sbert.data.records import ScoredPair
from sbert.data.sources import BEIR_DIR, BEIR_SETS
from sbert.data.sts import STS_SUBSETS, read_sick, read_sts

# The proxy sets, by name: what sbert evaluate retrieval builds from the data folder (see below).
PROXY_SETS = ("stsb-proxy", "snli-proxy", "sick-proxy", "sts12-16-proxy")


@dataclass
class RetrievalSet:
    """Queries, a corpus and the relevance judgements (qrels) between them.

    Attributes:
        name: For reports.
        corpus: Document id → text (a BEIR title is put before its text).
        queries: Query id → text, only queries with at least one relevant document.
        qrels: Query id → {document id: relevance grade > 0}.
    """

    name: str
    corpus: dict[str, str] = field(default_factory=dict)
    queries: dict[str, str] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)

    def save(self, folder: str | Path, split: str = "test") -> None:
        """Write the set in BEIR's layout (what :func:`read_beir` reads)."""
        folder = Path(folder)
        (folder / "qrels").mkdir(parents=True, exist_ok=True)
        _write_jsonl(
            folder / "corpus.jsonl", ({"_id": i, "title": "", "text": t} for i, t in self.corpus.items())
        )
        _write_jsonl(folder / "queries.jsonl", ({"_id": i, "text": t} for i, t in self.queries.items()))
        rows = [f"{q}\t{d}\t{grade}" for q, docs in self.qrels.items() for d, grade in docs.items()]
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(row + "\n" for row in rows), encoding="utf-8"
        )


def read_beir(folder: str | Path, split: str = "test", skip_bad_lines: bool = False) -> RetrievalSet:
    """Read a BEIR folder; queries without a relevant document are dropped, as BEIR does.

    Raises:
        FileNotFoundError: a file of the layout is missing (the message names it).
        DataFormatError: a line that is not JSON, lacks ``_id`` or its text, repeats an id, or a
            qrels row naming a query or document the set lacks (file and line in the message);
            with ``skip_bad_lines`` such lines are skipped and counted instead.
    """
    folder = Path(folder)
    corpus = {
        doc_id: f"{record.get('title') or ''} {record['text']}".strip()
        for doc_id, record in _read_jsonl(folder / "corpus.jsonl", skip_bad_lines)
    }
    queries = {
        query_id: record["text"]
        for query_id, record in _read_jsonl(folder / "queries.jsonl", skip_bad_lines, non_empty=True)
    }
    qrels = _read_qrels(folder / "qrels" / f"{split}.tsv", queries, corpus, skip_bad_lines)
    return RetrievalSet(folder.name, corpus, {q: queries[q] for q in qrels}, qrels)


def load_retrieval_set(
    dataset: str | Path, data_dir: str | Path | None = None, split: str = "test", skip_bad_lines: bool = False
) -> RetrievalSet:
    """A proxy set by name (``stsb-proxy``, ``snli-proxy``, ``sick-proxy``, ``sts12-16-proxy``), a downloaded BEIR set by name (``scifact``,
    ``nfcorpus``), or a BEIR folder by path: what ``sbert evaluate retrieval`` and
    ``sbert train file --dev-retrieval`` take.

    Examples:
        >>> load_retrieval_set("stsb-proxy", "../shared/data").name
        'stsb-proxy'
    """
    if str(dataset) in PROXY_SETS:
        return proxy_set(str(dataset), data_dir)
    folder = Path(dataset)
    if str(dataset).lower() in BEIR_SETS and not folder.exists():
        folder = downloaded_beir(str(dataset).lower(), data_dir)  # by name, from the data folder
    return read_beir(folder, split, skip_bad_lines=skip_bad_lines)


def downloaded_beir(name: str, data_dir: str | Path | None = None) -> Path:
    """The folder of a BEIR set ``sbert data download --only SciFact`` (or ``NFCorpus``) filled.

    Raises:
        MissingDataError: no data directory, or the set is not in it (the message says how to fetch it).

    Not run by the tests: it needs SciFact downloaded (no internet here; tests/data fetch a small
    BEIR zip from a 127.0.0.1 mirror instead).

    Examples:
        >>> downloaded_beir("scifact", "../shared/data")  # doctest: +SKIP
        PosixPath('../shared/data/beir/scifact')
    """
    if name not in BEIR_SETS:
        raise ValueError(f"unknown BEIR set {name!r}; sbert downloads {', '.join(BEIR_SETS)}")
    root = resolve_data_dir(data_dir)
    if root is None:
        raise MissingDataError(missing_data_message(f"{BEIR_SETS[name]}: no data directory"))
    folder = root / BEIR_DIR / name
    if not (folder / "corpus.jsonl").is_file():
        raise MissingDataError(
            f"{BEIR_SETS[name]}: {folder} not found; fetch it with `sbert data download {root} --only "
            f"{BEIR_SETS[name]}` (BEIR sets come only when named)"
        )
    return folder


def proxy_set(name: str, data_dir: str | Path | None = None) -> RetrievalSet:
    """A retrieval set made of the data folder's STS and NLI test data, for where BEIR cannot be had.

    - ``stsb-proxy``: each STSb test ``sentence1`` of a pair scored ≥ 4 is a query, its ``sentence2``
      the relevant document; the corpus is every other STSb test sentence (queries are left out of
      it, so a query never finds itself).
    - ``snli-proxy``: each SNLI test premise is a query, its entailed hypotheses the relevant
      documents; the corpus is every SNLI test hypothesis.
    - ``sick-proxy``: as ``stsb-proxy``, over SICK's test pairs (SemEval 2014 split) of relatedness
      ≥ 4 (of 1-5): ``sentence_A`` the query, ``sentence_B`` the relevant document, the corpus every
      other SICK test sentence.
    - ``sts12-16-proxy``: as ``stsb-proxy``, over every scored pair of every STS 2012-2016 test
      subset together (first-release text, whitespace stripped; 0-5 scores).

    A query never is in the corpus, so it never finds itself; a pair whose relevant sentence is itself
    a query is dropped, and a query with no relevant sentence left is dropped too. Equal texts are
    one document. They are proxies: short sentences, one or a few relevant documents, not BEIR's
    passages.

    Examples:
        >>> sick = proxy_set("sick-proxy", "../shared/data")
        >>> set(sick.queries.values()) & set(sick.corpus.values())
        set()
    """
    if name == "stsb-proxy":
        pairs = [(p.sentence1, p.sentence2) for p in read_stsb("test", data_dir) if p.score >= 4]
        pairs = [(q, d) for q, d in pairs if q != d]
        every = {s for p in read_stsb("test", data_dir) for s in (p.sentence1, p.sentence2)}
        return _from_pairs(name, pairs, sorted(every - {q for q, _ in pairs}))
    if name == "snli-proxy":
        rows = read_snli_senteval("test", data_dir)
        pairs = [(r.sentence1.strip(), r.sentence2.strip()) for r in rows if r.label == "entailment"]
        return _from_pairs(name, pairs, sorted({r.sentence2.strip() for r in rows}))
    if name == "sick-proxy":
        return _from_scored(name, read_sick("test", data_dir), threshold=4.0)
    if name == "sts12-16-proxy":
        scored = [p for year in STS_SUBSETS for pairs in read_sts(year, data_dir).values() for p in pairs]
        return _from_scored(name, scored, threshold=4.0)
    raise ValueError(f"unknown proxy set {name!r}; choose one of {', '.join(PROXY_SETS)}")


def _from_scored(name: str, scored: list[ScoredPair], threshold: float) -> RetrievalSet:
    """Queries: ``sentence1`` of the pairs scored ≥ ``threshold``; corpus: every other sentence."""
    # STS12-16's first-release lines carry stray spaces: stripped, so equal sentences are one document.
    stripped = [(p.sentence1.strip(), p.sentence2.strip(), p.score) for p in scored]
    pairs = [(q, d) for q, d, score in stripped if score >= threshold and q != d]
    every = {s for q, d, _ in stripped for s in (q, d)}
    return _from_pairs(name, pairs, sorted(every - {q for q, _ in pairs}))


def _from_pairs(name: str, pairs: list[tuple[str, str]], documents: list[str]) -> RetrievalSet:
    doc_ids = {text: f"d{i}" for i, text in enumerate(documents)}
    query_ids: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for query, document in pairs:
        if document in doc_ids:
            query_id = query_ids.setdefault(query, f"q{len(query_ids)}")
            qrels.setdefault(query_id, {})[doc_ids[document]] = 1
    queries = {query_id: text for text, query_id in query_ids.items()}
    return RetrievalSet(name, {i: t for t, i in doc_ids.items()}, queries, qrels)


def _read_jsonl(
    path: Path, skip_bad_lines: bool, non_empty: bool = False
) -> Iterator[tuple[str, dict[str, str]]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing (a BEIR folder holds corpus.jsonl, queries.jsonl, qrels/)")
    seen: set[str] = set()
    with BadLines(path, skip_bad_lines) as bad:
        for number, line in utf8_lines(path, bad):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                bad.found(number, f"not JSON ({error.msg})")
                continue
            if not isinstance(record, dict) or not isinstance(record.get("text"), str) or "_id" not in record:
                bad.found(number, "expected an object with '_id' and a string 'text'")
                continue
            record_id = str(record["_id"])
            if non_empty and not record["text"].strip():
                bad.found(number, f"_id {record_id!r} has an empty text")
                continue
            if record_id in seen:
                bad.found(number, f"_id {record_id!r} appears again")
                continue
            seen.add(record_id)
            yield record_id, record


def _read_qrels(
    path: Path, queries: dict[str, str], corpus: dict[str, str], skip_bad_lines: bool
) -> dict[str, dict[str, int]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing (the relevance judgements of that split)")
    qrels: dict[str, dict[str, int]] = {}
    with BadLines(path, skip_bad_lines) as bad:
        for number, line in utf8_lines(path, bad):
            fields = line.rstrip("\n").split("\t")
            if number == 1 and not fields[-1].lstrip("-").isdigit():
                continue  # the header
            if len(fields) != 3 or not fields[2].lstrip("-").isdigit():
                bad.found(number, "expected query-id, corpus-id and an integer score, tab-separated")
                continue
            query_id, doc_id, grade = fields[0], fields[1], int(fields[2])
            if query_id not in queries:
                bad.found(number, f"query-id {query_id!r} is not in queries.jsonl")
            elif doc_id not in corpus:
                bad.found(number, f"corpus-id {doc_id!r} is not in corpus.jsonl")
            elif doc_id in qrels.get(query_id, {}):
                bad.found(number, f"the pair {query_id!r}, {doc_id!r} is judged again")
            elif grade > 0:  # grade 0 is judged not relevant: it counts for nothing
                qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


def _write_jsonl(path: Path, records: Iterator[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json_text.dumps(record, ensure_ascii=False) + "\n")
