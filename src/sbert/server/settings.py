"""What ``sbert serve`` can be told, each setting with its one name and its one default.

The command line's flags, :class:`~sbert.server.batcher.Batcher` and the app all read these; nothing
here imports anything heavy, so ``sbert serve --help`` shows the defaults without loading a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class Limits:
    """Request bounds: bytes of a body, items of a list field."""

    max_body_bytes: int = 2_000_000
    max_items: int = 2048

    def __post_init__(self) -> None:
        check_at_least(self, ("max_body_bytes", "max_items"), 1)


@dataclass(frozen=True)
class BatchSettings:
    """How the one model thread merges requests (see :mod:`sbert.server.batcher`).

    Attributes:
        max_batch_tokens: Most tokens of one batch. ``None``: the device's default
            (:func:`~sbert.server.serving_plan.default_batch_tokens`): 8192 padded tokens (sentences ×
            longest) on a CPU engine; on the GPU pipeline text-embeddings-inference's 16384, real
            tokens where it runs the model unpadded.
        max_batch_size: Most sentences in one forward pass (CPU engines; the GPU pipeline cuts by tokens).
        max_queued_items: Sentences (or rerank pairs) that may wait before a request gets 429.
        batch_wait_ms: The most a batch may wait for more requests, under load only (the clients
            just answered); 0 (the default): never, the next batch is whatever is queued when the
            engine is free, as text-embeddings-inference's queue forms it.
        pack: Pack a merged batch's sentences into rows without padding where the model allows.
    """

    max_batch_tokens: int | None = None
    max_batch_size: int = 32
    max_queued_items: int = 2048
    batch_wait_ms: float = 0.0
    pack: bool = True

    def __post_init__(self) -> None:
        check_at_least(self, ("max_batch_tokens", "max_batch_size", "max_queued_items"), 1)
        check_finite_at_least(self, ("batch_wait_ms",), 0.0)


@dataclass(frozen=True)
class ServeOptions:
    """How to serve: the command line's flags, grouped."""

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None
    index: str | None = None
    cross_encoder: str | None = None
    max_concurrent_requests: int = 512
    batching: BatchSettings = field(default_factory=BatchSettings)
    limits: Limits = field(default_factory=Limits)
    drain_timeout: float = 30.0
    log_level: str = "warning"
    engine_process: bool = False  # forward passes in a process of their own (sbert.server.engine)

    def __post_init__(self) -> None:
        check_at_least(self, ("max_concurrent_requests",), 1)
        check_at_least(self, ("port",), 0)
        if self.port > 65535:
            raise ValueError(f"port must be a whole number from 0 to 65535, got {self.port!r}")
        check_finite_at_least(self, ("drain_timeout",), 0.0)


def check_at_least(settings: object, names: tuple[str, ...], low: int) -> None:
    """Each setting named is ``None`` or a whole number of at least ``low``, else a ValueError naming it.

    Examples:
        >>> Limits(max_items=0)
        Traceback (most recent call last):
        ...
        ValueError: max_items must be a whole number of at least 1, got 0
    """
    for name in names:
        value = getattr(settings, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise ValueError(f"{name} must be a whole number of at least {low}, got {value!r}")


def check_finite_at_least(settings: object, names: tuple[str, ...], low: float) -> None:
    """Each setting named is a finite number of at least ``low`` (NaN is not), else a ValueError naming it.

    Examples:
        >>> BatchSettings(batch_wait_ms=float("nan"))
        Traceback (most recent call last):
        ...
        ValueError: batch_wait_ms must be a finite number of at least 0.0, got nan
    """
    for name in names:
        value = getattr(settings, name)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < low
        ):
            raise ValueError(f"{name} must be a finite number of at least {low}, got {value!r}")


def default(settings: type, name: str) -> object:
    """The default of one setting (for the command line's help)."""
    return next(item.default for item in fields(settings) if item.name == name)


def check_served_names(entries: list[str]) -> None:
    """Refuse a blank ``--served-model-name`` (``""``, ``MODEL=`` or spaces): a model served under
    the empty name answers a request that names ``""``, and every answer names it ``""``.

    Examples:
        >>> check_served_names(["text-embedding-3-small", "mini=small"])
        >>> check_served_names(["mini="])
        Traceback (most recent call last):
        ...
        ValueError: --served-model-name 'mini=': the name after MODEL= is empty; give a name, or leave the flag out
    """
    for entry in entries:
        _, equals, name = entry.rpartition("=")
        if not name.strip():
            where = "the name after MODEL= is" if equals else "the name is"
            raise ValueError(
                f"--served-model-name {entry!r}: {where} empty; give a name, or leave the flag out"
            )
