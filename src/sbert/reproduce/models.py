"""The models a reproduction trains, each made by the same ``sbert train`` command a user would run.

A model lives in ``FOLDER/<name>-<key>``, where the key hashes the command and the code, so a model
made by other code or settings is never reused; a run killed mid-training resumes from its checkpoint.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sbert.reproduce.cache import settings_key
from sbert.training.trainer import CHECKPOINT_DIR


@dataclass(frozen=True)
class TrainedModel:
    """A finished ``sbert train`` run: its model directory, its ``results.json`` and the command."""

    path: Path
    results: dict[str, Any]
    command: str


class ModelStore:
    """Trains models on demand and remembers them across runs.

    Args:
        folder: Where model directories go.
        fingerprint: The code fingerprint (part of every model's key).
        data_dir: The data directory passed to every command.
        base: The model every recipe starts from (``None``: the bundled all-MiniLM-L6-v2).
        bf16: Train under bf16 autocast.
    """

    def __init__(
        self, folder: str | Path, fingerprint: str, data_dir: str, base: str | None, bf16: bool
    ) -> None:
        self.folder = Path(folder)
        self.fingerprint = fingerprint
        self.data_dir = data_dir
        self.base = base
        self.bf16 = bf16

    def nli(
        self, pairs: int | None, pooling: str | None = None, concatenation: str | None = None, seed: int = 1
    ) -> TrainedModel:
        """Classification objective on SNLI (the data directory's SNLI test split), 1 epoch."""
        options = _optional(max_pairs=pairs, pooling=pooling, concatenation=concatenation)
        return self._train("nli", ["nli", "--seed", str(seed), *options])

    def stsb(
        self, seed: int, pairs: int | None, epochs: int, base: Path | None = None, pooling: str | None = None
    ) -> TrainedModel:
        """Regression objective on STSb train, from ``base`` (default: the store's base)."""
        options = _optional(max_pairs=pairs, pooling=pooling)
        name = "stsb" if base is None else f"{base.name}-stsb"
        argv = ["stsb", "--seed", str(seed), "--epochs", str(epochs), *options]
        return self._train(name, argv, base)

    def cross_stsb(self, seed: int, pairs: int | None, epochs: int, lr: float) -> TrainedModel:
        """The BERT-STSb cross-encoder baseline."""
        options = _optional(max_pairs=pairs)
        argv = ["cross-stsb", "--seed", str(seed), "--epochs", str(epochs), "--lr", str(lr), *options]
        return self._train("cross-stsb", argv)

    def _train(self, name: str, argv: list[str], base: Path | None = None) -> TrainedModel:
        base_option = ["--base", str(base)] if base else (["--base", self.base] if self.base else [])
        argv = [*argv, *base_option, "--bf16" if self.bf16 else "--no-bf16", "--eval-steps", "0"]
        key = settings_key(name, {"argv": argv, "data": self.data_dir}, self.fingerprint)
        path = self.folder / f"{name}-{key}"
        command = shlex.join(["sbert", "train", *argv, "--output", str(path)])
        if not (path / "results.json").is_file():
            resume = ["--resume"] if (path / CHECKPOINT_DIR).is_dir() else []
            progress = [] if sys.stderr.isatty() else ["--no-progress"]
            _run_train([*argv, "--output", str(path), "--data-dir", self.data_dir, *resume, *progress])
        results = json.loads((path / "results.json").read_text(encoding="utf-8"))
        return TrainedModel(path, results, command)


def _optional(**options: object) -> list[str]:
    """``--name value`` for every option that is set."""
    argv: list[str] = []
    for name, value in options.items():
        if value is not None:
            argv += [f"--{name.replace('_', '-')}", str(value)]
    return argv


def _run_train(argv: list[str]) -> None:
    """``sbert train ARGV`` in this process; errors propagate (a missing data set skips the cell)."""
    from sbert.cli import build_parser  # the CLI imports every subcommand: only when training

    args = build_parser().parse_args(["train", *argv])
    status = args.handler(args)
    if status:
        raise RuntimeError(f"sbert train {' '.join(argv)} stopped with status {status}")
