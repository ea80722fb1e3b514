"""A real ``sbert serve`` process on 127.0.0.1 (a helper module: conftest modules cannot be imported)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

SRC = Path(__file__).resolve().parents[2] / "src"
START_TIMEOUT = 90.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """``python -m sbert serve ARGS --port P``; :meth:`wait_ready` polls ``/health``."""

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        environment = {**os.environ, "PYTHONPATH": str(SRC), "TOKENIZERS_PARALLELISM": "false", **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sbert", "serve", *args, "--port", str(self.port)],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def wait_ready(self) -> ServerProcess:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited with {self.process.returncode}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"the server did not start in {START_TIMEOUT} s:\n{self.output()}")

    def wait_exit(self, timeout: float = 60.0) -> int:
        return self.process.wait(timeout)

    def output(self) -> str:
        if self.process.poll() is None:
            return "(still running)"
        assert self.process.stdout is not None
        return self.process.stdout.read()

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)


def tiny_server_args(model_dir: Path, *extra: str) -> list[str]:
    # float32 on PyTorch: vectors comparable with the in-process tiny encoder, and a fast start.
    return ["--model", str(model_dir), "--precision", "float32", "--backend", "torch", *extra]
