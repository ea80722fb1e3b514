"""A cache of experiment results, one JSON file per cell, valid only for the code and settings that made it."""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from sbert._version import __version__
from sbert.base.files import write_text_atomic


def code_fingerprint() -> str:
    """A hash of every Python source file of the installed sbert package and of these experiments.

    Any change to sbert's code or to an experiment gives a new fingerprint, so a cached result is
    never mistaken for one the current code would produce.
    """
    digest = hashlib.sha256()
    for package, root in (
        ("sbert", Path(str(resources.files("sbert")))),
        ("experiments", Path(__file__).parent),
    ):
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{package}/{path.relative_to(root)}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def settings_key(cell_id: str, params: dict[str, Any], fingerprint: str) -> str:
    """What a cached result must match: the cell, its parameters and the code."""
    blob = json.dumps({"cell": cell_id, "params": params, "code": fingerprint}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class CachedResult:
    result: dict[str, Any]
    seconds: float
    made_at: str


class CellCache:
    """Results of finished cells under ``folder``; each file is written atomically.

    A file whose key does not match (other code, other settings) or that cannot be parsed is
    ignored, and the cell runs again.
    """

    def __init__(self, folder: str | Path, fingerprint: str | None = None) -> None:
        self.folder = Path(folder)
        self.fingerprint = fingerprint or code_fingerprint()

    def _file(self, cell_id: str) -> Path:
        return self.folder / f"{cell_id.replace('/', '__')}.json"

    def get(self, cell_id: str, params: dict[str, Any]) -> CachedResult | None:
        path = self._file(cell_id)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if record.get("key") != settings_key(cell_id, params, self.fingerprint):
            return None
        return CachedResult(record["result"], float(record["seconds"]), record["made_at"])

    def put(self, cell_id: str, params: dict[str, Any], result: dict[str, Any], seconds: float) -> None:
        record = {
            "key": settings_key(cell_id, params, self.fingerprint),
            "cell": cell_id,
            "params": params,
            "made_by": {"sbert": __version__, "code": self.fingerprint, "python": platform.python_version()},
            "made_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "seconds": seconds,
            "result": result,
        }
        write_text_atomic(self._file(cell_id), json.dumps(record, indent=2, default=str) + "\n")
