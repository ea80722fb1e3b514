"""The engine plan: what ``encode()`` runs, decided once from what was asked for and what the machine has.

A model resolves its precision and backend into one frozen :class:`EnginePlan` (the fallback warning
comes from here, once), and everything that reports or records them reads that plan:
``model.precision``, ``model.backend``, ``model.packs``, ``encode()`` itself, a store's manifest and
the server's ``/health``. What a model says it runs is therefore what it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sbert.inference.cpu import CpuCapabilities
from sbert.inference.precision import (
    check_backend,
    check_precision,
    choose_precision,
    cuda_auto,
    resolve_backend,
    torch_precision,
    warn_once,
)

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class EnginePlan:
    """How ``encode()`` computes, and why where it is not what was asked for.

    Attributes:
        requested_precision: What was asked for (``auto``, ``float32``, ...).
        requested_backend: What was asked for (``auto``, ``torch``, ``openvino``).
        device: Where it runs (``"cpu"``, ``"cuda:0"``).
        cpu: The CPU capabilities the plan was made for.
        precision: What runs: ``float32``, ``bfloat16``, ``float16`` (CUDA), ``mixed`` or ``int8``.
        backend: What runs it: ``torch`` or ``openvino``.
        packs: Whether ``encode(pack=True)`` packs rows (:mod:`sbert.inference.packing`).
        fallbacks: Why the precision or backend differ from what was asked for, one line each.
        reason: Why ``auto`` chose this precision where the device alone decides (CUDA); else ``None``.

    Examples:
        >>> import torch
        >>> from sbert.inference.cpu import AVX2_ONLY
        >>> plan = make_plan("int8", "torch", torch.device("cpu"), AVX2_ONLY)
        >>> plan.precision, plan.backend
        ('float32', 'torch')
        >>> plan.fallbacks[0]
        "precision='int8' runs only on the openvino backend, not on torch, so float32 is used instead"
    """

    requested_precision: str
    requested_backend: str
    device: str
    cpu: CpuCapabilities
    precision: str
    backend: str
    packs: bool = False
    fallbacks: tuple[str, ...] = ()
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The plan as a store manifest, an index manifest or ``/health`` records it."""
        return {
            "precision": self.precision,
            "backend": self.backend,
            "device": self.device,
            "packs": self.packs,
            "cpu": self.cpu.name,
            "requested": {"precision": self.requested_precision, "backend": self.requested_backend},
            "fallbacks": list(self.fallbacks),
            "reason": self.reason,
        }

    def without_openvino(self, reason: str) -> EnginePlan:
        """This plan on PyTorch, where OpenVINO could not compile the model (``reason``; the model
        warns when it finds out)."""
        precision = torch_precision(self.precision, _device(self.device), self.cpu)
        return replace(
            self, precision=precision, backend="torch", packs=False, fallbacks=(*self.fallbacks, reason)
        )


def make_plan(
    precision: str,
    backend: str,
    device: torch.device,
    cpu: CpuCapabilities,
    packable: Callable[[str], bool] = lambda precision: False,
) -> EnginePlan:
    """Resolve ``precision`` and ``backend`` for ``device`` and ``cpu``, warning once per fallback.

    Args:
        precision, backend: What was asked for.
        device: Where it runs.
        cpu: The CPU's capabilities (:func:`~sbert.inference.cpu.this_cpu`, or a simulated class).
        packable: Whether the model packs rows at a precision (on OpenVINO).

    Raises:
        ValueError: an unknown precision or backend (the message lists the choices), or
            ``backend="openvino"`` on another device than the CPU.
        ImportError: ``backend="openvino"`` without the extra installed.
    """
    requested_precision, requested_backend = check_precision(precision), check_backend(backend)
    chosen, reason = choose_precision(requested_precision, device, requested_backend, cpu)
    engine = resolve_backend(requested_backend, device, chosen)
    if reason is not None:
        warn_once(reason)
    return EnginePlan(
        requested_precision=requested_precision,
        requested_backend=requested_backend,
        device=str(device),
        cpu=cpu,
        precision=chosen,
        backend=engine,
        packs=engine == "openvino" and packable(chosen),
        fallbacks=(reason,) if reason else (),
        reason=cuda_auto(device)[1] if requested_precision == "auto" and device.type == "cuda" else None,
    )


def _device(name: str) -> torch.device:
    import torch

    return torch.device(name)
