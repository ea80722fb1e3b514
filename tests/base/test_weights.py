"""WeightsStamp: what a compiled graph or bf16 copy was built from, asked on every encode() call."""

from __future__ import annotations

import torch
from torch import nn

from sbert.base import weights
from sbert.base.weights import WeightsStamp, parameter_version


def _step(model: nn.Module, fused: bool) -> None:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=fused)
    model(torch.ones(1, 4)).sum().backward()
    optimizer.step()


def test_a_stamp_sees_every_kind_of_update() -> None:
    model = nn.Linear(4, 4)
    stamp = WeightsStamp(model)
    assert stamp.holds(model)
    with torch.no_grad():
        model.bias.add_(1.0)  # in place: the version counter moves
    assert not stamp.holds(model)
    for fused in (True, False):  # a fused step bumps no version counter: the samples tell
        stamp = WeightsStamp(model)
        _step(model, fused)
        assert not stamp.holds(model)
    stamp = WeightsStamp(model)
    model.load_state_dict({k: v.clone() for k, v in model.state_dict().items()}, assign=True)
    assert not stamp.holds(model)  # new tensors, the same values: rebuilt all the same


def test_another_models_training_compiles_nothing_again() -> None:
    served, trained = nn.Linear(4, 4), nn.Linear(4, 4)
    stamp = WeightsStamp(served)
    _step(trained, fused=True)
    assert stamp.holds(served)  # the step was counted, the samples compared, and they match


def test_between_optimizer_steps_no_weight_is_read(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    model = nn.Linear(4, 4)
    stamp = WeightsStamp(model)
    reads: list[int] = []
    real = weights._samples
    monkeypatch.setattr(weights, "_samples", lambda params: reads.append(1) or real(params))
    for _ in range(3):
        assert stamp.holds(model)
    assert reads == []  # the per-call check is the host key alone
    _step(nn.Linear(4, 4), fused=False)
    assert stamp.holds(model)
    assert reads == [1]


def test_parameter_version_still_moves_with_a_fused_step() -> None:
    model = nn.Linear(4, 4)
    before = parameter_version(model)
    _step(model, fused=True)
    assert parameter_version(model) != before
