"""Using OpenVINO and NNCF as a guest: no telemetry, and the host's logging left as it was found.

- **Telemetry.** Importing OpenVINO starts its telemetry: it writes ``~/intel/`` and looks up an
  analytics host (about 20 lookups during a conversion). sbert imports OpenVINO with the telemetry
  package hidden, so OpenVINO and NNCF fall back to their built-in no-op stubs: nothing is written
  and no socket is opened. A user who opted in with OpenVINO's own tool (``opt_in_out --opt_in``,
  which writes ``1`` to ``~/intel/openvino_telemetry``) keeps it, and so does a program that
  imported OpenVINO before sbert did. ``SBERT_OPENVINO_TELEMETRY=on`` leaves it as OpenVINO sets it.
- **Logging.** ``openvino.convert_model`` sets the root logger to ERROR and restores it only when
  it succeeds; NNCF's ``set_log_level`` changes the level of every handler its logger holds. Both
  run inside :func:`host_logging_kept`, which puts the root logger and its handlers back as they
  were, and quiets the named libraries' loggers only for the duration.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

TELEMETRY_ENV = "SBERT_OPENVINO_TELEMETRY"
_TELEMETRY_PACKAGE = "openvino_telemetry"


def telemetry_wanted() -> bool:
    """Whether the user chose OpenVINO's telemetry: ``SBERT_OPENVINO_TELEMETRY=on`` or an opt-in file."""
    if os.environ.get(TELEMETRY_ENV, "").lower() in ("1", "on", "true", "yes"):
        return True
    consent = Path.home() / "intel" / "openvino_telemetry"  # where OpenVINO's opt_in_out writes
    try:
        return consent.read_text(encoding="utf-8").strip() == "1"
    except OSError:
        return False


def import_openvino(with_nncf: bool = False) -> ModuleType:
    """``openvino`` (and ``nncf`` first, when asked), imported with telemetry off unless chosen.

    Examples:
        >>> ov = import_openvino()
        >>> ov.Core is not None
        True
    """
    hide = telemetry_wanted() is False and _TELEMETRY_PACKAGE not in sys.modules
    with _hidden_module(_TELEMETRY_PACKAGE) if hide else contextlib.nullcontext():
        import openvino

        if with_nncf:
            import nncf  # noqa: F401  (binds its telemetry stub now)
    return openvino


@contextlib.contextmanager
def _hidden_module(name: str) -> Iterator[None]:
    """Make ``import name`` fail inside the block (a ``None`` entry in ``sys.modules``), then undo it."""
    sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get(name, "absent") is None:
            del sys.modules[name]


@contextlib.contextmanager
def host_logging_kept(quiet: Sequence[str] = ()) -> Iterator[None]:
    """Run a block that may reconfigure logging; afterwards the root logger is as it was.

    Restores the root logger's level, filters, handlers and each handler's level, even when the
    block raises. The loggers named in ``quiet`` are set to ERROR inside the block and get their
    own level back after it.

    Examples:
        >>> before = logging.getLogger().level
        >>> with host_logging_kept(quiet=["transformers"]):
        ...     logging.getLogger().setLevel(logging.ERROR)
        >>> logging.getLogger().level == before
        True
    """
    root = logging.getLogger()
    saved_root = (root.level, list(root.filters), list(root.handlers))
    saved_handler_levels = [(handler, handler.level) for handler in root.handlers]
    quieted = [logging.getLogger(name) for name in quiet]
    saved_levels = [(named, named.level) for named in quieted]
    for named in quieted:
        named.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for named, level in saved_levels:
            named.setLevel(level)
        root.setLevel(saved_root[0])
        root.filters = saved_root[1]
        root.handlers = saved_root[2]
        for handler, level in saved_handler_levels:
            handler.setLevel(level)


def compile_config(precision: str, native_bf16: bool, threads: int) -> dict[str, object]:
    """The CPU plugin's settings for a graph run at ``precision``: one place, so a graph compiled
    from the cache without the engine (:mod:`sbert.encoder.cold_start`) computes as the engine's."""
    # int8 keeps its unquantized steps in fp32: with bf16 there, STSb Spearman fell 82.01 → 81.95.
    low = "bf16" if precision in ("bfloat16", "mixed") and native_bf16 else "f32"
    return {
        "INFERENCE_NUM_THREADS": threads,
        "PERFORMANCE_HINT": "THROUGHPUT",
        "INFERENCE_PRECISION_HINT": low,
    }


class _SignalStack(ctypes.Structure):  # Linux stack_t
    _fields_ = [("sp", ctypes.c_void_p), ("flags", ctypes.c_int), ("size", ctypes.c_size_t)]


@contextlib.contextmanager
def keep_signal_stack() -> Iterator[None]:
    """Restore the calling thread's alternate signal stack after OpenVINO work.

    OpenVINO leaves the main thread's alternate signal stack pointing at memory it has unmapped.
    Python installs its handlers with SA_ONSTACK, so the next handled signal (a Ctrl-C during
    training) crashed the process with a segmentation fault (seen in the trainer's Ctrl-C test).
    """
    if not sys.platform.startswith("linux"):
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    saved = _SignalStack()
    libc.sigaltstack(None, ctypes.byref(saved))
    try:
        yield
    finally:
        libc.sigaltstack(ctypes.byref(saved), None)
