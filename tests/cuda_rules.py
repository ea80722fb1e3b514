"""CUDA's rules, enforced on the CPU: GPU code run where it will not run still fails where CUDA fails.

The CPU's kernels accept what CUDA's refuse: a float32 LayerNorm weight on fp16 activations ran on
every CPU test and raised "expected scalar type Half but found Float" on the first GPU (issue 43).
And a host synchronisation in a batch loop (``.item()``, ``.cpu()``, ``nonzero``, boolean indexing)
costs nothing on the CPU but stalls a GPU once per batch. :class:`CudaRules` is a dispatch mode that
sees every ATen op a block runs on its thread and

- refuses mixed floating dtypes in the ops whose CUDA kernels refuse them (:data:`SAME_DTYPE`:
  layer norm, matrix products, attention, index/scatter ops that write one tensor into another),
  with CUDA's message and the op's name;
- records each host synchronisation of a tensor that would be on the device (:attr:`syncs`): the
  ops that make the host wait (:data:`SYNCING`, boolean indexing, ``.item()``/``int()``/``bool()``)
  and the blocking copies to the host (``.cpu()``, ``.to("cpu")``, ``.tolist()``, ``.numpy()``).
  Non-blocking copies to the host are counted apart (:attr:`downloads`).

On the CPU host and device are one, so "would be on the device" is tracked: a tensor is on the
device when it was moved there (``.to(device)`` of a host tensor, ``.cuda()``), marked with
:meth:`on_device` (a model's weights), made by a factory op (``torch.empty(..., device=)``), or
computed by an op from a tensor on the device; a copy to the host is a new, host tensor. Only the
thread that entered the mode is watched: the pipeline's host threads do host work.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

aten = torch.ops.aten


def _packets(*names: str) -> frozenset[Any]:
    """The overload packets of ATen ops by name, those this torch has."""
    return frozenset(getattr(aten, name) for name in names if hasattr(aten, name))


# CUDA's kernels of these ops dispatch on one floating dtype and read every floating input as it:
# a float32 weight beside fp16 activations raises ("expected scalar type Half but found Float",
# "self and mat2 must have the same dtype", "Index put requires the source and destination dtypes
# match", "Expected query, key, and value to have the same dtype"...). A bool attention mask is not
# floating and passes; a float one must match the query.
SAME_DTYPE = _packets(
    "native_layer_norm",
    "layer_norm",
    "native_group_norm",
    "_fused_rms_norm",
    "mm",
    "bmm",
    "addmm",
    "addbmm",
    "baddbmm",
    "matmul",
    "linear",
    "mv",
    "addmv",
    "dot",
    "_addmm_activation",
    "scaled_dot_product_attention",
    "_scaled_dot_product_attention_math",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_flash_attention_forward",
    "_efficient_attention_forward",
    "index_put",
    "index_put_",
    "_index_put_impl_",
    "index_copy",
    "index_copy_",
    "index_add",
    "index_add_",
    "index_reduce",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "masked_scatter",
    "masked_scatter_",
    "embedding_bag",
    "_embedding_bag",
)

# Ops whose CUDA kernels make the host wait for the device: the result's size or value is needed
# on the host (``item``, ``nonzero``, ``torch.equal``, a repeat count without ``output_size``...).
SYNCING = _packets(
    "_local_scalar_dense",
    "nonzero",
    "masked_select",
    "is_nonzero",
    "equal",
    "allclose",
    "_unique",
    "_unique2",
    "unique_dim",
    "unique_consecutive",
    "unique_dim_consecutive",
    "bincount",
    "histc",
)
_BOOLEAN_INDEXED = _packets("index", "index_put", "index_put_", "_index_put_impl_")
_MAY_SYNC_WITHOUT_SIZE = _packets("repeat_interleave")


class CudaRuleError(RuntimeError):
    """An op that CUDA refuses, run on the CPU."""


@dataclass(frozen=True)
class Sync:
    """One host synchronisation: what caused it and the line of the code under test that did."""

    what: str
    where: str
    inside: str = ""  # the innermost library frame (transformers' own code, say), if not sbert's

    def __str__(self) -> str:
        return f"{self.what} at {self.where}" + (f" inside {self.inside}" if self.inside else "")


class CudaRules(TorchDispatchMode):
    """The dispatch mode; use :func:`cuda_rules` (or the ``cuda_rules`` fixture) to enter it."""

    def __init__(self) -> None:
        super().__init__()
        self.device_tensors: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self.syncs: list[Sync] = []
        self.downloads: list[Sync] = []
        self.checked = 0  # ops whose dtypes were checked: a test can see the rules ran
        self.thread = threading.get_ident()
        self.active = True

    def on_device(self, *items: Tensor | nn.Module | Iterable[Tensor]) -> None:
        """Mark tensors (or a module's parameters and buffers) as on the device."""
        for item in items:
            if isinstance(item, nn.Module):
                tensors: Iterable[Tensor] = [*item.parameters(), *item.buffers()]
            elif isinstance(item, Tensor):
                tensors = [item]
            else:
                tensors = item
            for tensor in tensors:
                self.device_tensors[tensor] = True

    def is_on_device(self, tensor: Tensor) -> bool:
        return tensor in self.device_tensors or (
            tensor._base is not None and tensor._base in self.device_tensors
        )

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The block outside the rules (a reference computed by another library, say)."""
        self.active = False
        try:
            with _disable_current_modes():
                yield
        finally:
            self.active = True

    def reset(self) -> None:
        """Forget the syncs and downloads counted so far (e.g. after a warm-up call)."""
        self.syncs.clear()
        self.downloads.clear()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        packet = func._overloadpacket
        inputs = [leaf for leaf in tree_flatten((args, kwargs))[0] if isinstance(leaf, Tensor)]
        if packet in SAME_DTYPE:
            self.checked += 1
            _check_one_dtype(func, inputs)
        # A factory op (empty, arange...) counts as the host's: on the CPU its device argument says
        # nothing. Its tensor goes to the device with the first op that mixes it with a device tensor.
        on_device = any(self.is_on_device(tensor) for tensor in inputs)
        if on_device and self._syncs(func, packet, args, kwargs):
            self._record(self.syncs, f"aten.{packet.__name__}")
        out = func(*args, **kwargs)
        if on_device:
            for leaf in tree_flatten(out)[0]:
                if isinstance(leaf, Tensor):
                    self.device_tensors[leaf] = True
        return out

    @staticmethod
    def _syncs(func: Any, packet: Any, args: Any, kwargs: Any) -> bool:
        if packet in SYNCING:
            return True
        if packet in _BOOLEAN_INDEXED:  # x[mask] and x[mask] = v: nonzero inside
            indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
            return any(
                isinstance(index, Tensor) and index.dtype in (torch.bool, torch.uint8) for index in indices
            )
        if packet in _MAY_SYNC_WITHOUT_SIZE:
            return kwargs.get("output_size") is None
        return False

    def _record(self, into: list[Sync], what: str) -> None:
        if threading.get_ident() != self.thread or not self.active:
            return
        into.append(Sync(what, *_caller()))

    # The copies to the host, and the moves to the device, which never reach the dispatcher on the
    # CPU (``.cpu()`` of a CPU tensor returns it as it is): Tensor's methods, wrapped while active.

    def _to(self, original: Callable[..., Tensor], tensor: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        # ``_parse_to`` takes no ``copy`` (GradScaler passes ``copy=True``): it changes no device.
        parsed = {key: value for key, value in kwargs.items() if key != "copy"}
        device, _, non_blocking, _ = torch._C._nn._parse_to(*args, **parsed)
        result = original(tensor, *args, **kwargs)
        if device is None or threading.get_ident() != self.thread or not self.active:
            return result
        # ``.to("cpu")`` names the host; ``.to(device)`` with a device object is, in GPU code, the
        # device (``x.to(self.device)``, ``mask.to(tokens.device)``): an upload or a no-op there.
        named = kwargs.get("device", args[0] if args else None)
        if not isinstance(named, str):
            self.device_tensors[result] = True
            return result
        return self._moved(result, tensor, device, non_blocking)

    def _moved(self, result: Tensor, source: Tensor, device: torch.device, non_blocking: bool) -> Tensor:
        if device.type != "cpu":  # .cuda() of a CPU tensor fails before this; other devices: as is
            return result
        if not self.is_on_device(source):  # a host tensor moved to "the device"
            self.device_tensors[result] = True
            return result
        self._record(self.downloads if non_blocking else self.syncs, "a copy to the host")
        with _disable_current_modes():
            return result.clone() if result is source else result  # a new, host tensor

    def _read(
        self, original: Callable[..., Any], what: str, tensor: Tensor, *args: Any, **kwargs: Any
    ) -> Any:
        if self.is_on_device(tensor):
            self._record(self.syncs, what)
        return original(tensor, *args, **kwargs)

    @contextmanager
    def _methods(self) -> Iterator[None]:
        originals = {name: getattr(Tensor, name) for name in ("to", "cpu", "tolist", "numpy")}

        def to(tensor: Tensor, *args: Any, **kwargs: Any) -> Tensor:
            return self._to(originals["to"], tensor, *args, **kwargs)

        def cpu(tensor: Tensor, *args: Any, **kwargs: Any) -> Tensor:
            result = originals["cpu"](tensor, *args, **kwargs)
            if threading.get_ident() != self.thread or not self.active or not self.is_on_device(tensor):
                return result  # .cpu() of a host tensor: it stays on the host (no move, no sync)
            return self._moved(result, tensor, torch.device("cpu"), False)

        def tolist(tensor: Tensor) -> Any:
            return self._read(originals["tolist"], ".tolist()", tensor)

        def numpy(tensor: Tensor, *args: Any, **kwargs: Any) -> Any:
            return self._read(originals["numpy"], ".numpy()", tensor, *args, **kwargs)

        replacements = {"to": to, "cpu": cpu, "tolist": tolist, "numpy": numpy}
        for name, method in replacements.items():
            setattr(Tensor, name, method)
        try:
            yield
        finally:
            for name, method in originals.items():
                setattr(Tensor, name, method)


def _check_one_dtype(func: Any, inputs: list[Tensor]) -> None:
    floating = [tensor.dtype for tensor in inputs if tensor.is_floating_point()]
    if len(set(floating)) > 1:
        expected = floating[0]
        found = next(dtype for dtype in floating if dtype != expected)
        raise CudaRuleError(
            f"{func}: CUDA refuses mixed floating dtypes here: expected scalar type "
            f"{_name(expected)} but found {_name(found)} (inputs: {', '.join(map(str, floating))})"
        )


def _name(dtype: torch.dtype) -> str:
    return {torch.float16: "Half", torch.bfloat16: "BFloat16", torch.float32: "Float"}.get(dtype, str(dtype))


def _caller() -> tuple[str, str]:
    """The innermost frame of sbert's code (else of the tests) that led here, and the innermost
    frame of another library below it (e.g. transformers' mask preparation), if any."""
    stack = [frame for frame in traceback.extract_stack() if frame.filename != __file__]
    frames = [frame for frame in stack if "site-packages" not in frame.filename]
    ours = [frame for frame in frames if "/src/sbert/" in frame.filename] or frames
    frame = ours[-1]
    below = stack[stack.index(frame) + 1 :]
    libraries = [f for f in below if "site-packages/" in f.filename and "/torch/" not in f.filename]
    inside = ""
    if libraries:
        lib = libraries[-1]
        inside = f"{lib.filename.rsplit('site-packages/', 1)[-1]}:{lib.lineno} ({lib.name})"
    return f"{frame.filename.rsplit('/src/', 1)[-1]}:{frame.lineno} ({frame.name})", inside


@contextmanager
def cuda_rules() -> Iterator[CudaRules]:
    """Run the block under CUDA's rules (see the module's docstring)."""
    rules = CudaRules()
    with rules._methods(), rules:
        yield rules


def plan_as_on_cuda(monkeypatch: Any) -> torch.device:
    """Plans made as for a CUDA device (an H100, simulated: ``auto`` is float16) and the runners
    built for it (the GPU pipeline), while the weights stay on the CPU: everything but the device."""
    from tests.inference.test_cuda_precision import simulate_gpu

    from sbert.inference import planning, runners
    from sbert.inference.plan import make_plan

    simulate_gpu(monkeypatch, "NVIDIA H100 80GB HBM3", (9, 0))
    cuda = torch.device("cuda:0")
    monkeypatch.setattr(planning, "make_plan", lambda request, cpu, device: make_plan(request, cpu, cuda))
    monkeypatch.setattr(runners, "on_cuda", lambda device: True)
    return cuda
