"""The engine plan: what ``encode()`` runs, decided from what was asked for and what the machine has.

:func:`make_plan` is pure: a :class:`PlanRequest` (parsed once, where the user named it), the CPU's
capabilities and the device go in; one frozen :class:`EnginePlan` comes out, with a line for each
fallback. The caller says those lines (once) and reads everything else from the plan:
``model.precision``, ``model.backend``, ``model.packs``, ``encode()`` itself, a store's manifest and
the server's ``/health``. What a model says it runs is therefore what it runs. A runner that fails
(an OpenVINO graph that does not compile or misses its probe) is recorded in the request, and the
plan made again gives the next-best runner for that device.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sbert.inference.cpu import CpuCapabilities
from sbert.inference.precision import (
    CALIBRATED,
    ComputeBackend,
    ComputePrecision,
    choose_precision,
    cuda_auto,
    resolve_backend,
    torch_precision,
)

if TYPE_CHECKING:
    import torch

ANY_PRECISION = "any"  # a failure of the whole backend (the model does not convert), not of one graph


@dataclass(frozen=True)
class Failure:
    """A runner that failed: ``backend`` at ``precision`` (or at :data:`ANY_PRECISION`), and why."""

    backend: ComputeBackend
    precision: str
    reason: str


@dataclass(frozen=True)
class PlanRequest:
    """What a plan is made for, beside the machine.

    Attributes:
        precision, backend: What was asked for, parsed.
        packs_at: The precisions at which the model packs rows on OpenVINO.
        openvino_refusal: Why this model cannot run on OpenVINO at all (``None``: it can).
        fixed: A model that runs float32 on PyTorch whatever is asked (a static token table).
        failures: Runners that failed on this model so far.
    """

    precision: ComputePrecision
    backend: ComputeBackend = ComputeBackend.AUTO
    packs_at: frozenset[str] = frozenset()
    openvino_refusal: str | None = None
    fixed: bool = False
    failures: tuple[Failure, ...] = field(default=())

    @classmethod
    def of(cls, precision: str, backend: str = "auto", **fields: Any) -> PlanRequest:
        """Parse ``precision`` and ``backend`` (a ``ValueError`` lists the choices)."""
        return cls(ComputePrecision.parse(precision), ComputeBackend.parse(backend), **fields)


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
        >>> plan = make_plan(PlanRequest.of("int8", "torch"), AVX2_ONLY, torch.device("cpu"))
        >>> plan.precision, plan.backend
        ('float32', 'torch')
        >>> plan.fallbacks[0]
        "precision='int8' runs only on the openvino backend, not on torch, so float32 is used instead"
    """

    requested_precision: ComputePrecision
    requested_backend: ComputeBackend
    device: str
    cpu: CpuCapabilities
    precision: ComputePrecision
    backend: ComputeBackend
    packs: bool = False
    fallbacks: tuple[str, ...] = ()
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The plan as a store manifest, an index manifest or ``/health`` records it."""
        return {
            "precision": self.precision.value,
            "backend": self.backend.value,
            "device": self.device,
            "packs": self.packs,
            "cpu": self.cpu.name,
            "requested": {
                "precision": self.requested_precision.value,
                "backend": self.requested_backend.value,
            },
            "fallbacks": list(self.fallbacks),
            "reason": self.reason,
        }


def make_plan(request: PlanRequest, cpu: CpuCapabilities, device: torch.device) -> EnginePlan:
    """Resolve ``request`` for ``cpu`` and ``device``; no side effect (the caller says the fallbacks).

    Raises:
        ValueError: ``backend="openvino"`` on another device than the CPU, or for a model that
            OpenVINO cannot run (``request.openvino_refusal``).
        ImportError: ``backend="openvino"`` without the extra installed.
    """
    asked, backend_asked = request.precision, request.backend
    if request.fixed:
        float32, torch_backend = ComputePrecision.FLOAT32, ComputeBackend.TORCH
        return EnginePlan(asked, backend_asked, str(device), cpu, float32, torch_backend)
    precision, reason = choose_precision(asked, device, backend_asked, cpu)
    backend = resolve_backend(backend_asked, device, precision)
    fallbacks = [reason] if reason else []
    if backend == ComputeBackend.OPENVINO and request.openvino_refusal:
        if backend_asked == ComputeBackend.OPENVINO:
            raise ValueError(f"{request.openvino_refusal}; use backend='torch' or 'auto'")
        fallbacks.append(f"{request.openvino_refusal}; PyTorch runs it")
        backend, precision = ComputeBackend.TORCH, torch_precision(precision, device, cpu)
    # Asked for by name, a backend that fails raises instead: failures steer "auto" only.
    failures = request.failures if backend_asked == ComputeBackend.AUTO else ()
    while (failure := _failure(failures, backend, precision)) is not None:
        backend, precision = _next_best(backend, precision, device, cpu, failures)
        runner = "PyTorch" if backend == ComputeBackend.TORCH else f"OpenVINO {precision}"
        fallbacks.append(f"{failure.reason}; {runner} runs it instead")
    return EnginePlan(
        requested_precision=asked,
        requested_backend=backend_asked,
        device=str(device),
        cpu=cpu,
        precision=precision,
        backend=backend,
        packs=backend == ComputeBackend.OPENVINO and precision in request.packs_at,
        fallbacks=tuple(fallbacks),
        reason=cuda_auto(device)[1] if asked == ComputePrecision.AUTO and device.type == "cuda" else None,
    )


def _failure(failures: Iterable[Failure], backend: str, precision: str) -> Failure | None:
    for failure in failures:
        if failure.backend == backend and failure.precision in (precision, ANY_PRECISION):
            return failure
    return None


def _next_best(
    backend: ComputeBackend,
    precision: ComputePrecision,
    device: torch.device,
    cpu: CpuCapabilities,
    failures: tuple[Failure, ...],
) -> tuple[ComputeBackend, ComputePrecision]:
    """The runner after a failed one on the same device: a calibrated OpenVINO graph gives way to
    OpenVINO at bf16 (native) or float32, which is faster than any PyTorch; anything else to PyTorch."""
    if backend == ComputeBackend.OPENVINO and precision in CALIBRATED:
        return backend, torch_precision(ComputePrecision.MIXED, device, cpu)
    if backend == ComputeBackend.OPENVINO:
        return ComputeBackend.TORCH, torch_precision(precision, device, cpu)
    raise AssertionError(f"no runner after {backend}/{precision} ({failures})")
