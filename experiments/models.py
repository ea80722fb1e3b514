"""The models a reproduction trains, each by the library call behind the ``sbert train`` command it reports.

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

from experiments.cache import settings_key
from sbert.base.options import Recipe
from sbert.training.output_dir import CHECKPOINT_DIR
from sbert.training.recipes import RecipeConfig, train_recipe


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
        return self._train(
            "nli", "nli", seed=seed, max_pairs=pairs, pooling=pooling, concatenation=concatenation
        )

    def stsb(
        self, seed: int, pairs: int | None, epochs: int, base: Path | None = None, pooling: str | None = None
    ) -> TrainedModel:
        """Regression objective on STSb train, from ``base`` (default: the store's base)."""
        name = "stsb" if base is None else f"{base.name}-stsb"
        return self._train(name, "stsb", base, seed=seed, epochs=epochs, max_pairs=pairs, pooling=pooling)

    def cross_stsb(self, seed: int, pairs: int | None, epochs: int, lr: float) -> TrainedModel:
        """The BERT-STSb cross-encoder baseline."""
        return self._train("cross-stsb", "cross-stsb", seed=seed, epochs=epochs, lr=lr, max_pairs=pairs)

    def _train(self, name: str, recipe: Recipe, base: Path | None = None, **settings: Any) -> TrainedModel:
        settings = {key: value for key, value in settings.items() if value is not None}
        base_name = str(base) if base else self.base
        argv = [recipe, *_flags(settings), *(["--base", base_name] if base_name else [])]
        argv += ["--bf16" if self.bf16 else "--no-bf16", "--eval-steps", "0"]
        key = settings_key(name, {"argv": argv, "data": self.data_dir}, self.fingerprint)
        path = self.folder / f"{name}-{key}"
        command = shlex.join(["sbert", "train", *argv, "--output", str(path)])
        if not (path / "results.json").is_file():
            if "concatenation" in settings:
                settings["concatenation"] = settings["concatenation"].split(",")
            if "lr" in settings:
                settings["learning_rate"] = settings.pop("lr")
            config = RecipeConfig(
                recipe,
                path,
                base=base_name,
                data_dir=self.data_dir,
                bf16=self.bf16,
                eval_steps=0,
                resume=(path / CHECKPOINT_DIR).is_dir(),
                show_progress_bar=sys.stderr.isatty(),
                **settings,
            )
            if train_recipe(config).interrupted:  # errors propagate: missing data skips the cell
                raise RuntimeError(f"{command} was interrupted")
        results = json.loads((path / "results.json").read_text(encoding="utf-8"))
        return TrainedModel(path, results, command)


def _flags(settings: dict[str, Any]) -> list[str]:
    """The ``sbert train`` flags of ``settings`` (``--max-pairs 100`` ...): the command a user would run."""
    return [part for name, value in settings.items() for part in (f"--{name.replace('_', '-')}", str(value))]
