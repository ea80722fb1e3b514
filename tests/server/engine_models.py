"""Models the engine-process tests load in the engine (a helper module: the engine imports it by name)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sbert import SentenceEncoder

STALL = 7  # a batch whose first token id after [CLS] is this one makes the engine wait (a long batch)


class Stalling:
    """The tiny encoder, whose ``encode_token_ids`` waits 60 s on a batch that starts with :data:`STALL`,
    so that a test can kill the engine while it holds that batch."""

    def __init__(self, path: Path) -> None:
        self.model = tiny(path)

    def encode(self, *args: Any, **kwargs: Any) -> Any:
        return self.model.encode(*args, **kwargs)

    def encode_token_ids(self, ids: Any, options: Any) -> Any:
        if ids and len(ids[0]) > 1 and ids[0][1] == STALL:
            time.sleep(60)
        return self.model.encode_token_ids(ids, options)


def tiny(path: Path) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(path, device="cpu", precision="float32", backend="torch")


def stalling(path: Path) -> Stalling:
    return Stalling(path)


def broken(path: Path) -> SentenceEncoder:
    raise OSError(f"{path}: no such model here")
