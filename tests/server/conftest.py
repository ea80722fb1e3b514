"""The tiny BERT served by a real process for a whole test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_process import ServerProcess, tiny_server_args


@pytest.fixture(scope="module")
def server(tiny_model_dir: Path) -> Iterator[ServerProcess]:
    """The tiny BERT served with default limits."""
    process = ServerProcess(tiny_server_args(tiny_model_dir, "--served-model-name", "tiny-bert")).wait_ready()
    yield process
    process.terminate()
    process.wait_exit()
