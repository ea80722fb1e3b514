"""Resumable checkpoints without pickle: safetensors for tensors, JSON for the rest.

A checkpoint folder holds ``objective.safetensors`` (the encoder and any head of the loss),
``optimizer.pt`` (AdamW's moments, read back with ``torch.load(weights_only=True)``, which refuses
pickled code), ``rng.safetensors`` (torch's RNG) and ``state.json`` (position in the data, scheduler,
Python and NumPy RNG, best dev score). It is written under a temporary name and renamed into place,
so a run killed while saving leaves the previous checkpoint intact.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, load_model, save_file, save_model
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

from sbert.base import json_text
from sbert.base.files import replace_dir, staging_dir

STATE_FILE = "state.json"


def save_checkpoint(
    folder: Path, objective: nn.Module, optimizer: Optimizer, scheduler: LRScheduler, state: dict[str, Any]
) -> None:
    """Write everything a run needs to continue exactly where it stands."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_dir(folder)
    try:
        save_model(objective, str(staging / "objective.safetensors"))
        torch.save(optimizer.state_dict(), staging / "optimizer.pt")
        rng = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available():
            rng |= {f"cuda{i}": s for i, s in enumerate(torch.cuda.get_rng_state_all())}
        save_file(rng, str(staging / "rng.safetensors"))
        full_state = state | {
            "scheduler": scheduler.state_dict(),
            "python_rng": _python_rng_to_json(random.getstate()),
            "numpy_rng": _numpy_rng_to_json(np.random.get_state()),
        }
        (staging / STATE_FILE).write_text(json_text.dumps(full_state, indent=1) + "\n", encoding="utf-8")
        replace_dir(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def load_checkpoint(
    folder: Path, objective: nn.Module, optimizer: Optimizer, scheduler: LRScheduler
) -> dict[str, Any]:
    """Restore weights, optimizer, scheduler and every RNG; returns the saved trainer state."""
    state_file = folder / STATE_FILE
    if not state_file.is_file():
        raise FileNotFoundError(f"{folder}: no checkpoint to resume from ({STATE_FILE} missing)")
    state: dict[str, Any] = json.loads(state_file.read_text(encoding="utf-8"))
    missing, unexpected = load_model(objective, str(folder / "objective.safetensors"), strict=False)
    if missing or unexpected:
        raise ValueError(
            f"{folder}: the checkpoint does not match the loss and model being trained "
            f"(missing {sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]})"
        )
    device = next(objective.parameters()).device
    optimizer.load_state_dict(torch.load(folder / "optimizer.pt", map_location=device, weights_only=True))
    scheduler.load_state_dict(state.pop("scheduler"))
    rng = load_file(str(folder / "rng.safetensors"))
    torch.set_rng_state(rng["torch"])
    cuda_states = [rng[k] for k in sorted(rng) if k.startswith("cuda")]
    if cuda_states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda_states)
    random.setstate(_python_rng_from_json(state.pop("python_rng")))
    np.random.set_state(_numpy_rng_from_json(state.pop("numpy_rng")))
    return state


def check_same_run(state: dict[str, Any], folder: Path, examples: int, total_steps: int) -> None:
    """Refuse to resume a checkpoint made for other data or settings (another number of steps).

    Examples:
        >>> check_same_run({"examples": 64, "total_steps": 4}, Path("out/checkpoint"), 32, 2)
        Traceback (most recent call last):
        ...
        ValueError: out/checkpoint: made for 64 examples and 4 steps, but this run has 32 and 2; resume with the same data and settings
    """
    if state["examples"] != examples or state["total_steps"] != total_steps:
        raise ValueError(
            f"{folder}: made for {state['examples']} examples and {state['total_steps']} steps, "
            f"but this run has {examples} and {total_steps}; resume with the same data and settings"
        )


def _python_rng_to_json(state: tuple[Any, ...]) -> list[Any]:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def _python_rng_from_json(data: list[Any]) -> tuple[Any, ...]:
    version, internal, gauss = data
    return (version, tuple(internal), gauss)


def _numpy_rng_to_json(state: Any) -> list[Any]:
    name, keys, position, has_gauss, cached = state
    return [name, keys.tolist(), int(position), int(has_gauss), float(cached)]


def _numpy_rng_from_json(data: list[Any]) -> tuple[Any, ...]:
    name, keys, position, has_gauss, cached = data
    return (name, np.asarray(keys, dtype=np.uint32), position, has_gauss, cached)
