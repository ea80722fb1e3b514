"""OpenVINO as a guest: the host's logging is left as it was found, and nothing leaves the machine."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sbert import SentenceEncoder
from sbert.inference.openvino.engine import OpenVinoEngine
from sbert.inference.openvino.runtime import TELEMETRY_ENV, host_logging_kept, telemetry_wanted

pytest.importorskip("nncf")

CALIBRATION = ["a man is running in the park", "the cat is eating", "a child plays music in the rain"]


def _root_state() -> tuple:
    root = logging.getLogger()
    return root.level, list(root.filters), [(handler, handler.level) for handler in root.handlers]


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_conversion_and_calibration_leave_the_root_logger_alone(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    monkeypatch.setenv("SBERT_CACHE_DIR", "off")
    application = logging.StreamHandler()
    application.setLevel(logging.WARNING)
    logging.getLogger().addHandler(application)
    try:
        before = _root_state()
        OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, precision, calibration=CALIBRATION)
        assert _root_state() == before
    finally:
        logging.getLogger().removeHandler(application)


def test_sbert_warnings_reach_caplog_after_calibration(
    tiny_encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SBERT_CACHE_DIR", "off")
    OpenVinoEngine(tiny_encoder.transformer, tiny_encoder.pooling, "int8", calibration=CALIBRATION)
    logging.getLogger("sbert").warning("still heard")
    assert "still heard" in caplog.text


def test_logging_is_restored_when_the_block_raises() -> None:
    root = logging.getLogger()
    handler = logging.NullHandler()
    root.addHandler(handler)
    try:
        before = _root_state()
        with pytest.raises(RuntimeError), host_logging_kept(quiet=["noisy.library"]):
            root.setLevel(logging.ERROR)
            handler.setLevel(logging.ERROR)
            root.addHandler(logging.NullHandler())
            assert logging.getLogger("noisy.library").level == logging.ERROR
            raise RuntimeError("conversion failed")
        assert _root_state() == before
        assert logging.getLogger("noisy.library").level == logging.NOTSET
    finally:
        root.removeHandler(handler)


def test_telemetry_is_off_unless_the_user_opted_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(TELEMETRY_ENV, raising=False)
    assert not telemetry_wanted()
    (tmp_path / "intel").mkdir()
    (tmp_path / "intel" / "openvino_telemetry").write_text("0", encoding="utf-8")
    assert not telemetry_wanted()
    (tmp_path / "intel" / "openvino_telemetry").write_text("1", encoding="utf-8")
    assert telemetry_wanted()
    (tmp_path / "intel" / "openvino_telemetry").unlink()
    monkeypatch.setenv(TELEMETRY_ENV, "on")
    assert telemetry_wanted()


# Every network call a process makes raises an audit event (PEP 578), from any thread.
WATCHER = """
import os, socket, sys
log = open(sys.argv[2], "a", encoding="utf-8")
WATCHED = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
           "socket.sendto", "socket.bind"}
def hook(event, args):
    inet = event == "socket.__new__" and args[1] in (socket.AF_INET, socket.AF_INET6)
    if event in WATCHED or inet:
        log.write(f"{event} {args!r}\\n")
        log.flush()
sys.addaudithook(hook)
from sbert import SentenceEncoder
model = SentenceEncoder.from_pretrained(sys.argv[1], device="cpu", precision="float32", backend="openvino")
print(model.encode(["a man plays the guitar", "rain"]).shape)
"""


def test_encoding_with_openvino_opens_no_socket_and_writes_no_home_files(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    events = tmp_path / "events.txt"
    events.touch()
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CI", "TF_BUILD", "JENKINS_URL", TELEMETRY_ENV)  # OpenVINO mutes itself in CI
    }
    environment.update(HOME=str(home), SBERT_CACHE_DIR="off", HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-c", WATCHER, str(tiny_model_dir), str(events)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "(2, 32)" in done.stdout
    assert events.read_text(encoding="utf-8") == ""
    assert list(home.iterdir()) == []  # no ~/intel/
