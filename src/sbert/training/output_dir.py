"""The folder a training run writes: the model, saved into it entry by entry, beside
``training_log.jsonl``, ``training_curve.png`` and, while the run is unfinished, ``checkpoint/``;
and the output rule's kind for it (:mod:`sbert.base.outputs`), which a run claims before it writes.
"""

from __future__ import annotations

import os
import shutil
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from sbert.base.files import replace_dir, staging_dir
from sbert.base.outputs import MODEL, OutputKind, claim_output

CHECKPOINT_DIR = "checkpoint"
LOG_FILE = "training_log.jsonl"
PLOT_FILE = "training_curve.png"


RESULTS_FILE = "results.json"
FIRST_STAGE_DIR = "nli"  # the two-stage recipe's first stage, itself a training run's folder
RUN_FILES = frozenset({LOG_FILE, PLOT_FILE, CHECKPOINT_DIR, RESULTS_FILE, FIRST_STAGE_DIR})


def _is_training_output(folder: Path) -> bool:
    """A folder a training run wrote, by markers only sbert writes: its model (not a ``config.json``,
    which any Hugging Face folder has), its log or its checkpoint's state (not a ``results.json``,
    which anything may write); a two-stage recipe's folder may hold only its first stage so far."""
    if MODEL.recognise(folder) or (folder / LOG_FILE).is_file():
        return True
    if (folder / CHECKPOINT_DIR / "state.json").is_file():  # checkpoint.STATE_FILE (which loads torch)
        return True
    return (folder / FIRST_STAGE_DIR).is_dir() and _is_training_output(folder / FIRST_STAGE_DIR)


# A run writes its folder in place, entry by entry, over its own entries of a run before: a folder
# that also holds anything else (a user's file) is refused, as a model is, and so is a link.
TRAINING = OutputKind(
    "training run",
    recognise=_is_training_output,
    owns=lambda folder, name: name in RUN_FILES or bool(MODEL.owns and MODEL.owns(folder, name)),
    in_place=True,
    links=False,
)


def claim_training_output(output: str | Path) -> AbstractContextManager[Path]:
    """:func:`~sbert.base.outputs.claim_output` for a training run, by the main process only (the others
    of a distributed run write into the same folder).

    Examples:
        >>> with claim_training_output("out/run") as folder:
        ...     folder.mkdir(parents=True, exist_ok=True)
        ...     _ = (folder / LOG_FILE).write_text("", encoding="utf-8")
        >>> TRAINING.recognise(folder)
        True
    """
    if os.environ.get("RANK", "0") != "0":
        return nullcontext(Path(output))
    return claim_output(output, TRAINING)


def save_model_into(model: Any, output_dir: Path) -> None:
    """Save ``model`` into ``output_dir`` beside the log and checkpoint, entry by entry.

    ``model.save`` replaces a whole directory, so it writes to a staging folder first; each of its
    files and folders then replaces its counterpart in ``output_dir`` by a rename.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    staging = staging_dir(output_dir / "model")
    try:
        model.save(staging / "model")
        for entry in (staging / "model").iterdir():
            if entry.is_dir():
                replace_dir(entry, output_dir / entry.name)
            else:
                os.replace(entry, output_dir / entry.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
