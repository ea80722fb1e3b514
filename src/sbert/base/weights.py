"""Fingerprints of a module's weights: a cheap version that changes when they change (the key of
what is built from them: bf16 copies, compiled graphs, GPU pipelines, a model's identity) and a hash
of every weight (what a stored identity or a graph cache compares).

On the ground floor because both the engines (:mod:`sbert.inference`) and the identity of stored
vectors (:mod:`sbert.embeddings.identity`) key on them; neither imports the other for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook


def parameter_version(model: torch.nn.Module) -> tuple[object, ...]:
    """Changes whenever a parameter is replaced or updated in place (an optimizer step, ``load_state_dict``).

    Fused optimizers (``AdamW(fused=True)``) update weights without bumping the tensors' version
    counters, so 64 evenly spaced entries of each parameter are part of the fingerprint too: a step
    moves them all. Reading whole tensors would cost every call a pass over the weights; the samples
    are gathered in one ``cat``. Still about 2 ms for all-MiniLM-L6-v2 on a 2-core AVX2 CPU: what is
    asked on every call is a :class:`WeightsStamp`.
    """
    params = list(model.parameters())  # the Parameter objects themselves: a detached view has a new id
    return _host_key(params), _samples(params)


class WeightsStamp:
    """The weights something was built from (a compiled graph, bf16 copies), asked on every call
    whether they still hold at a quarter of :func:`parameter_version`'s cost.

    A parameter's identity, storage and version counter are compared on each call (what
    :func:`weights_version` reads); the sampled values only after an optimizer step somewhere in the
    process, which is how a fused optimizer's update (no version counter bumped) is told from another
    model's training: a step of an unrelated model compiles nothing again. Not seen, as by
    :func:`weights_version`: writes through ``.data`` with no optimizer step.

    Examples:
        >>> layer = torch.nn.Linear(2, 2)
        >>> stamp = WeightsStamp(layer)
        >>> stamp.holds(layer)
        True
        >>> with torch.no_grad():
        ...     _ = layer.weight.mul_(2)
        >>> stamp.holds(layer)
        False
    """

    def __init__(self, model: torch.nn.Module) -> None:
        _count_optimizer_steps()
        params = list(model.parameters())
        self._key = _host_key(params)
        self._steps = _optimizer_steps[0]
        self._samples = _samples(params)

    def holds(self, model: torch.nn.Module) -> bool:
        """Whether ``model``'s weights are still the ones stamped."""
        params = list(model.parameters())
        if _host_key(params) != self._key:
            return False
        steps = _optimizer_steps[0]
        if steps != self._steps:  # a fused step changes values alone: compare the samples
            if _samples(params) != self._samples:
                return False
            self._steps = steps
        return True


def _host_key(params: list[torch.nn.Parameter]) -> tuple[object, ...]:
    return tuple((id(p), p.data_ptr(), p._version) for p in params)


def _samples(params: list[torch.nn.Parameter]) -> bytes:
    """64 evenly spaced entries of each parameter, as bytes (on a GPU, a copy that waits for it)."""
    with torch.no_grad():
        samples = torch.cat([p.detach().reshape(-1)[:: max(1, p.numel() // 64)].float() for p in params])
    return samples.cpu().numpy().tobytes()


def weights_version(model: torch.nn.Module) -> tuple[object, ...]:
    """Changes whenever a parameter is replaced or updated in place, read on the host alone: no
    device work and no wait for the device, so a GPU's ``encode()`` can ask it on every call.

    A parameter's identity, storage and version counter see ``load_state_dict``, ``.to()``, ``+=``
    under ``no_grad`` and the loop and foreach optimizers. Fused optimizers (``AdamW(fused=True)``,
    sbert's trainer's and transformers' default) update without bumping version counters, so every
    ``optimizer.step()`` of the process is counted too (a step hook, registered once; it changes
    nothing the step computes): weights converted before a step are never reused after it. Not seen:
    writes through ``.data``, which autograd does not see either (``with torch.no_grad():
    p.copy_(...)`` is seen). :func:`parameter_version` also samples the values (a read of the
    weights: on a GPU, a copy to the host that waits for the device).
    """
    _count_optimizer_steps()
    return _optimizer_steps[0], _host_key(list(model.parameters()))


_optimizer_steps = [0]  # optimizer steps taken in this process since the hook was registered
_hook_lock = threading.Lock()
_hooked: list[object] = []


def _count_optimizer_steps() -> None:
    if _hooked:
        return
    with _hook_lock:
        if not _hooked:

            def counted(optimizer: object, args: object, kwargs: object) -> None:
                _optimizer_steps[0] += 1

            _hooked.append(register_optimizer_step_post_hook(counted))


def hash_weights(digest: Any, module: Any, rename: Callable[[str], str] = lambda name: name) -> None:
    """Feed every weight of ``module`` (name, dtype, shape and bytes) into a hashlib ``digest``."""
    for name, tensor in module.state_dict().items():
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{rename(name)}:{flat.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
