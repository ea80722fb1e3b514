"""A download is trusted only once it is whole: short, damaged or mis-published downloads are never
recorded in ARCHIVES.sha256, fail with a clear error, and a later good download goes through."""

from __future__ import annotations

import functools
import hashlib
import http.server
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.data.test_download import _RangeHandler, mirror  # noqa: F401  (the fixture)

from sbert.data.download import ARCHIVE_SUMS, SOURCES, DownloadError, download

SICK = next(source for source in SOURCES if source.name == "sick_train.zip")


class _ShortHandler(_RangeHandler):
    """Announces the whole file but closes the connection halfway through it."""

    def send_head(self):  # type: ignore[no-untyped-def]
        data = Path(self.translate_path(self.path)).read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.close_connection = True
        return None


def serve(directory: Path, handler: type[http.server.SimpleHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(directory))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def recorded(data: Path) -> str:
    path = data / ARCHIVE_SUMS
    return path.read_text() if path.exists() else ""


def test_a_server_that_closes_early_is_not_trusted_and_the_next_run_continues(
    mirror: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    for url in serve(mirror, _ShortHandler):
        with pytest.raises(DownloadError, match=r"sick_train\.zip: the download stopped at \d+ of \d+ bytes"):
            download(data, ["SICK"], mirror=url)
    assert "sick_train.zip" not in recorded(data)
    for url in serve(mirror, _RangeHandler):
        download(data, ["SICK"], mirror=url)  # continues the .part with a range request
    assert "sick_train.zip" in recorded(data)
    assert (data / "sick/senteval/SICK_train.txt").read_bytes() == b"content of SICK_train.txt\n"


def test_a_truncated_archive_is_a_clear_error_and_a_later_good_one_is_accepted(
    mirror: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    good = (mirror / SICK.name).read_bytes()
    (mirror / SICK.name).write_bytes(good[: len(good) - 30])  # a file:// archive cut short
    with pytest.raises(DownloadError, match=r"sick_train\.zip: not a readable archive \(BadZipFile"):
        download(data, ["SICK"], mirror=mirror.as_uri())
    assert recorded(data) == "" and not list((data / ".downloads").glob("sick*"))
    (mirror / SICK.name).write_bytes(good)
    download(data, ["SICK"], mirror=mirror.as_uri())
    assert "sick_train.zip" in recorded(data)


def test_a_garbage_part_is_fetched_again_from_the_start(
    mirror: Path,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = tmp_path / "data"
    (data / ".downloads").mkdir(parents=True)
    (data / ".downloads" / f"{SICK.name}.part").write_bytes(b"garbage from another file")
    with caplog.at_level(logging.WARNING, logger="sbert"):
        for url in serve(mirror, _RangeHandler):
            download(data, ["SICK"], mirror=url)
    assert "the resumed download is damaged; fetching it again from the start" in caplog.text
    assert (data / "sick/senteval/SICK_train.txt").read_bytes() == b"content of SICK_train.txt\n"
    digest = hashlib.sha256((mirror / SICK.name).read_bytes()).hexdigest()
    assert f"{digest}  ./sick_train.zip" in recorded(data)


def test_a_mirror_checksum_is_checked_before_anything_is_trusted(
    mirror: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    name = "TREC_10.label"  # a plain file: only its checksum can tell a damaged copy
    (mirror / "SHA256SUMS").write_text(f"{'0' * 64}  {name}\n")
    with pytest.raises(
        DownloadError, match=rf"{name} from .*differs from 0+ published in the mirror's SHA256SUMS"
    ):
        download(data, ["SentEval"], mirror=mirror.as_uri())
    assert name not in recorded(data)
    digest = hashlib.sha256((mirror / name).read_bytes()).hexdigest()
    (mirror / "SHA256SUMS").write_text(f"{digest} *{name}\n")  # the binary-mode mark is read too
    download(data, ["SentEval"], mirror=mirror.as_uri())
    assert name in recorded(data)


def test_a_bare_path_as_mirror_gets_the_file_url(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=rf"is not a URL; for a local folder use file://{tmp_path}"):
        download(tmp_path / "data", ["STSb"], mirror=str(tmp_path))
