"""sbert data download / check against local mirrors (file:// and http://127.0.0.1); no test goes online."""

from __future__ import annotations

import functools
import http.server
import io
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from sbert.cli import main
from sbert.data import read_stsb
from sbert.data.download import (
    DATASETS,
    DEFAULT_DATASETS,
    SOURCES,
    ChecksumError,
    Source,
    check,
    download,
    outputs,
)
from sbert.data.paths import MissingDataError, dataset_file, resolve_data_dir

STSB_LINE = "main-captions\tMSRvid\t2012test\t0001\t4.2\tA man plays a guitar.\tA person plays music.\n"
SNLI_HEADER = "gold_label\tbinary\tparse1\tparse2\ts1_parse\tsentence1\tsentence2\n"


def _member_text(member: str) -> bytes:
    return (STSB_LINE if member.endswith(".csv") else f"content of {member}\n").encode("utf-8")


def _archive(source: Source) -> bytes:
    """A small stand-in for the published file, with the members sbert extracts from it."""
    if source.convert:  # SNLI: its tab-separated release, one pair without a gold label
        members = {
            f"snli_1.0/snli_1.0_{split}.txt": SNLI_HEADER
            + f"entailment\t-\t-\t-\t-\tA {split} man.\tA person.\n-\t-\t-\t-\t-\tno gold\tlabel\n"
            for split in ("dev", "test")
        }
        contents = {name: text.encode("utf-8") for name, text in members.items()}
    elif "" in source.members:
        return _member_text(source.members[""])
    else:
        contents = {member: _member_text(member) for member in source.members}
    buffer = io.BytesIO()
    if source.name.endswith(".tar.gz"):
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for name, data in contents.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    else:
        with zipfile.ZipFile(buffer, "w") as zipped:
            for name, data in contents.items():
                zipped.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture()
def mirror(tmp_path: Path) -> Path:
    folder = tmp_path / "mirror"
    folder.mkdir()
    for source in SOURCES:
        (folder / source.name).write_bytes(_archive(source))
    return folder


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """A static file server that honours ``Range: bytes=N-`` (the standard library's does not)."""

    ranges: ClassVar[list[str]] = []

    def send_head(self):  # type: ignore[no-untyped-def]
        asked = self.headers.get("Range")
        if not asked:
            return super().send_head()
        self.ranges.append(asked)
        data = Path(self.translate_path(self.path)).read_bytes()
        start = int(asked.removeprefix("bytes=").rstrip("-"))
        self.send_response(206)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        return io.BytesIO(data[start:])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def http_mirror(mirror: Path) -> Iterator[str]:
    _RangeHandler.ranges = []
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_RangeHandler, directory=str(mirror))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_sources_cover_the_issue_and_have_distinct_names() -> None:
    paper = {"STSb", "SICK", "STS12", "STS13", "STS14", "STS15", "STS16", "SNLI", "SentEval"}
    assert set(DEFAULT_DATASETS) == paper and set(DATASETS) == paper | {"SciFact", "NFCorpus"}
    assert len({source.name for source in SOURCES}) == len(SOURCES)  # one mirror folder holds them all


def test_download_from_a_file_mirror_fills_the_layout_sbert_reads(mirror: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    written = download(data, mirror=mirror.as_uri())
    assert set(written) == {path for source in SOURCES if source.default for path in outputs(source)}
    (pair,) = read_stsb("test", data)
    assert (pair.sentence1, pair.score) == ("A man plays a guitar.", 4.2)
    assert (data / "snli_senteval" / "labels.dev").read_text() == "entailment\n"  # the "-" pair dropped
    assert (data / "snli_senteval" / "s1.test").read_text() == "A test man.\n"
    good, bad, missing = check(data)
    assert len(good) == len(written) and bad == [] and missing == []
    assert not list((data / ".downloads").glob("*.part"))


def test_http_mirror_resumes_a_partial_download(http_mirror: str, mirror: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    name = "msr_paraphrase_test.txt"
    full = (mirror / name).read_bytes()
    (data / ".downloads").mkdir(parents=True)
    (data / ".downloads" / f"{name}.part").write_bytes(full[:7])  # an interrupted run
    download(data, ["SentEval"], mirror=http_mirror)
    assert _RangeHandler.ranges == ["bytes=7-"]
    assert (data / "senteval_transfer" / "MRPC" / name).read_bytes() == full


def test_a_server_without_ranges_refetches_from_the_start(mirror: Path, tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        data = tmp_path / "data"
        (data / ".downloads").mkdir(parents=True)
        (data / ".downloads" / "TREC_10.label.part").write_bytes(b"garbage from elsewhere")
        download(data, ["SentEval"], mirror=f"http://127.0.0.1:{server.server_address[1]}")
        assert (data / "senteval_transfer/TREC/TREC_10.label").read_bytes() == (
            mirror / "TREC_10.label"
        ).read_bytes()
    finally:
        server.shutdown()
        server.server_close()


def test_a_changed_archive_is_refused_and_a_bad_file_is_reported(mirror: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    download(data, ["STSb"], mirror=mirror.as_uri())
    assert download(data, ["STSb"], mirror=mirror.as_uri()) == []  # in place and verified: skipped
    (data / "stsb/original/sts-dev.csv").write_text(STSB_LINE.replace("4.2", "0.1"), encoding="utf-8")
    _, bad, _ = check(data)
    assert bad == ["stsb/original/sts-dev.csv"]
    other = io.BytesIO()  # a whole archive, but not the one recorded before
    with tarfile.open(fileobj=other, mode="w:gz") as tar:
        for member in SOURCES[0].members:
            info = tarfile.TarInfo(member)
            info.size = len(STSB_LINE)
            tar.addfile(info, io.BytesIO(STSB_LINE.replace("4.2", "3.3").encode()))
    (mirror / "Stsbenchmark.tar.gz").write_bytes(other.getvalue())
    with pytest.raises(ChecksumError, match="Stsbenchmark.tar.gz: SHA-256 .* differs"):
        download(data, ["STSb"], mirror=mirror.as_uri())


def test_unreachable_source_names_the_url_and_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(
        OSError, match=r"http://127\.0\.0\.1:9/Stsbenchmark\.tar\.gz: cannot download.*--mirror"
    ):
        download(tmp_path, ["STSb"], mirror="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="unknown data set STS17"):
        download(tmp_path, ["STS17"])


def test_the_user_data_folder_is_the_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SBERT_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert resolve_data_dir() is None
    with pytest.raises(MissingDataError, match="run `sbert data download`"):
        dataset_file(None, "stsb/original/sts-test.csv", "STSb test")
    (tmp_path / "sbert" / "data").mkdir(parents=True)
    assert resolve_data_dir() == tmp_path / "sbert" / "data"
    with pytest.raises(MissingDataError, match="fill it with `sbert data download"):
        dataset_file(None, "stsb/original/sts-test.csv", "STSb test")


def test_cli_download_then_check(
    mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("SBERT_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("SBERT_DATA_MIRROR", mirror.as_uri())
    assert main(["data", "check"]) == 1
    assert "sbert data download" in capsys.readouterr().err
    assert main(["data", "download", "--only", "SICK"]) == 0
    assert (tmp_path / "data" / "sick" / "senteval" / "SICK_trial.txt").is_file()
    assert main(["data", "download"]) == 0
    assert main(["data", "check"]) == 0
    assert " 0 bad, 0 missing" in capsys.readouterr().out


BEIR_FILES = {
    "corpus.jsonl": '{"_id": "d1", "title": "Guitars", "text": "A man plays a guitar."}\n'
    '{"_id": "d2", "title": "", "text": "The dog runs in the park."}\n',
    "queries.jsonl": '{"_id": "q1", "text": "who plays music"}\n{"_id": "q2", "text": "a dog outside"}\n',
    "qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n",
    "qrels/train.tsv": "query-id\tcorpus-id\tscore\nq2\td2\t1\n",
    "qrels/dev.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t2\n",
}


def test_beir_sets_come_when_named_and_evaluate_retrieval_reads_them(
    http_mirror: str, mirror: Path, tmp_path: Path, tiny_model_dir: Path, capsys
) -> None:
    from sbert.data.beir import read_beir

    for source in SOURCES:
        if not source.default:  # a small BEIR zip of the published layout: <name>/corpus.jsonl ...
            folder = source.name.removesuffix(".zip")
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as zipped:
                for member in source.members:
                    zipped.writestr(member, BEIR_FILES[member.removeprefix(f"{folder}/")])
            (mirror / source.name).write_bytes(buffer.getvalue())
    data = tmp_path / "data"
    assert download(data, ["STSb"], mirror=http_mirror) and not (data / "beir").exists()  # not by default
    written = download(data, ["SciFact", "NFCorpus"], mirror=http_mirror)
    assert "beir/scifact/qrels/test.tsv" in written and "beir/nfcorpus/qrels/dev.tsv" in written
    _, bad, missing = check(data)
    assert bad == [] and not [path for path in missing if path.startswith(("beir/", "stsb/"))]
    scifact = read_beir(data / "beir" / "scifact")
    assert scifact.corpus["d1"].startswith("Guitars") and scifact.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}}
    (data / "beir" / "nfcorpus" / "queries.jsonl").unlink()
    # A set fetched once is then expected whole.
    assert [path for path in check(data)[2] if path.startswith("beir/")] == ["beir/nfcorpus/queries.jsonl"]
    capsys.readouterr()
    options = ["--model", str(tiny_model_dir), "--data-dir", str(data)]
    assert main(["evaluate", "retrieval", "scifact", *options]) == 0
    assert "scifact: 2 queries, 2 documents" in capsys.readouterr().out
    assert main(["evaluate", "retrieval", str(data / "beir" / "scifact"), "--split", "train", *options]) == 0
    assert ": 1 queries, 2 documents" in capsys.readouterr().out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["evaluate", "retrieval", "nfcorpus", *options[:-1], str(empty)]) == 1
    assert "sbert data download" in (err := capsys.readouterr().err) and "--only NFCorpus" in err


def test_offline_beir_download_names_the_url_and_the_way_out(tmp_path: Path, capsys) -> None:
    with pytest.raises(
        OSError, match=r"http://127\.0\.0\.1:9/nfcorpus\.zip: cannot download.*offline\? use --mirror"
    ):
        download(tmp_path, ["NFCorpus"], mirror="http://127.0.0.1:9")
    assert (
        main(["data", "download", str(tmp_path), "--only", "SciFact", "--mirror", "http://127.0.0.1:9"]) == 1
    )
    assert "scifact.zip: cannot download" in capsys.readouterr().err
    assert not (tmp_path / "beir").exists()
