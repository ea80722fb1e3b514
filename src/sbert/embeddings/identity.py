"""Which model made a vector: an identity recorded beside stored vectors and checked when they are reused.

Vectors are only comparable when the same network, pooling and layers made them: a store or index
built with mean pooling and queried with CLS pooling gives the identical sentence a cosine of 0.68
instead of 1.0, without any error. So stores and indexes record a :class:`ModelIdentity` and refuse a
model whose fingerprint differs. The fingerprint, not the name, is the truth: the same weights loaded
from another directory match; a different checkpoint under the same name does not.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from sbert.base.errors import ModelLoadError
from sbert.base.weights import hash_weights, parameter_version

# The pipeline fields a mismatch message names, in the order a user would check them.
PIPELINE_FIELDS = (
    "kind",
    "pooling",
    "layers",
    "dim",
    "max_seq_length",
    "max_active_dims",
    "prompts",
    "include_prompt",
)


class ModelMismatchError(ModelLoadError):
    """Stored vectors were made by another model or pipeline than the one given; the message says what differs."""


@dataclass(frozen=True)
class ModelIdentity:
    """What made a set of vectors.

    Attributes:
        name: What the model was loaded as (``"all-MiniLM-L6-v2"``, a hub id or a path), for display.
        source: The absolute directory the weights were read from, or ``None`` for an in-memory model.
        fingerprint: SHA-256 of the pipeline description and every weight.
        pipeline: Pooling mode, layer names (``Dense``, ``Normalize``), output dimension,
            ``max_seq_length``, and the model's prompts and ``include_prompt`` where it has them.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> identity = model_identity(SentenceEncoder.from_pretrained())
        >>> identity.pipeline["pooling"], identity.pipeline["dim"]
        ('mean', 384)
    """

    name: str
    source: str | None
    fingerprint: str
    pipeline: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "manifest") -> ModelIdentity:
        """Read an identity written by :meth:`to_dict`; a missing field is named with ``where``."""
        missing = [key for key in ("name", "fingerprint", "pipeline") if key not in data]
        if missing:
            raise ModelLoadError(f"{where}: the model identity lacks {', '.join(missing)}")
        return cls(
            name=str(data["name"]),
            source=data.get("source"),
            fingerprint=str(data["fingerprint"]),
            pipeline=dict(data["pipeline"]),
        )


def model_identity(model: Any) -> ModelIdentity:
    """The identity of a :class:`~sbert.SentenceEncoder` (cached until its weights change)."""
    version = parameter_version(model)
    cached = getattr(model, "_identity_cache", None)
    if cached is not None and cached[0] == version:
        return cached[1]
    sparse = getattr(model, "is_sparse", False)  # a SparseEncoder: its stacks' pooling, by route
    pipeline = {
        "pooling": model.pooling_mode if sparse else model.pooling.mode,
        "layers": [type(layer).__name__ for layer in model.layers],
        "dim": int(model.dim),
        "max_seq_length": int(model.max_seq_length),
    }
    # Only where set, so that a model without prompts keeps the fingerprint it had before prompts.
    if model.prompts.named:
        pipeline["prompts"] = model.prompts.config()
    if not getattr(model.pooling, "include_prompt", True):
        pipeline["include_prompt"] = False
    if sparse:
        pipeline["kind"] = "sparse"
        if model.max_active_dims is not None:
            pipeline["max_active_dims"] = int(model.max_active_dims)
    identity = ModelIdentity(
        name=str(model.name),
        source=getattr(model, "source", None),
        fingerprint=_fingerprint(model, pipeline),
        pipeline=pipeline,
    )
    model._identity_cache = (version, identity)
    return identity


def check_same_model(stored: ModelIdentity, model: Any, where: str) -> None:
    """Refuse ``model`` unless it is the model that made the vectors described at ``where``.

    Raises:
        ModelMismatchError: the fingerprints differ; the message names the differing pipeline fields
            (pooling ``mean`` vs ``cls``, ...), or says the weights differ.
    """
    given = model_identity(model)
    if given.fingerprint == stored.fingerprint:
        return
    differences = [
        f"{key} {stored.pipeline.get(key)!r} vs {given.pipeline.get(key)!r}"
        for key in PIPELINE_FIELDS
        if stored.pipeline.get(key) != given.pipeline.get(key)
    ]
    what = "; ".join(differences) if differences else "the weights differ"
    raise ModelMismatchError(
        f"{where}: made with model {stored.name!r} ({stored.source or 'in memory'}), which differs from "
        f"the model given, {given.name!r} ({given.source or 'in memory'}): {what} (stored vs given). "
        "Use the model that made the vectors, or rebuild them with this one."
    )


def _fingerprint(model: Any, pipeline: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(pipeline, sort_keys=True).encode("utf-8"))
    hash_weights(digest, model, _stable_name)
    return digest.hexdigest()


def _stable_name(name: str) -> str:
    """A weight's name as it was before the input module had one name for both kinds of model
    (``transformer.``; a static model's table at the top), so that the stores and indexes already
    on disk still match the model that made them."""
    if name.startswith("input_module.embedding."):
        return name.removeprefix("input_module.")
    if name.startswith("input_module."):
        return "transformer." + name.removeprefix("input_module.")
    return name
