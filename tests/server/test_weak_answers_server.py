"""An input over the model's limit sent with ``truncate: false`` is answered 413 and logs nothing:
the refused request left an empty batch, whose encoding logged an IndexError traceback (issue 54)."""

from __future__ import annotations

import logging

import pytest

from sbert import SentenceEncoder
from sbert.server.batcher import Batcher, InputTooLong

LONG = " ".join(["music"] * 100)  # 102 tokens, over the tiny model's 64


def test_a_refused_over_long_input_logs_no_traceback(
    tiny_encoder: SentenceEncoder, caplog: pytest.LogCaptureFixture
) -> None:
    batcher = Batcher(tiny_encoder)
    with caplog.at_level(logging.DEBUG, logger="sbert"):
        refused = batcher.embed([LONG], truncate=False)
        batcher.start()
        try:
            with pytest.raises(InputTooLong, match=r"input\[0\] has 102 tokens"):
                refused.result(timeout=30)
            kept = batcher.embed(["rain"], truncate=False)  # the model thread still serves
            assert kept.result(timeout=30).vectors.shape == (1, tiny_encoder.dim)
        finally:
            batcher.close()
    assert [record for record in caplog.records if record.levelno >= logging.WARNING] == []
    assert "Traceback" not in caplog.text and "IndexError" not in caplog.text
