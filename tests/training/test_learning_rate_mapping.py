"""build_optimizer's learning_rate_mapping: parameters by name pattern at their own learning rate."""

from __future__ import annotations

import pytest
from torch import nn

from sbert.training.config import TrainingConfig
from sbert.training.schedule import build_optimizer, build_scheduler


def two_layers() -> nn.Module:
    return nn.ModuleDict({"first": nn.Linear(2, 2), "static": nn.Linear(2, 2)})


def test_matching_parameters_get_their_rate_and_keep_the_decay_rule() -> None:
    optimizer = build_optimizer(two_layers(), 2e-5, 0.01, {r"^static\.": 1e-3})
    groups = [(g["lr"], g["weight_decay"], len(g["params"])) for g in optimizer.param_groups]
    assert groups == [(2e-5, 0.01, 1), (2e-5, 0.0, 1), (1e-3, 0.01, 1), (1e-3, 0.0, 1)]
    scheduler = build_scheduler(optimizer, total_steps=10, warmup_fraction=0.0)
    assert scheduler.get_last_lr() == pytest.approx([2e-5, 2e-5, 1e-3, 1e-3])


def test_without_a_mapping_the_groups_are_as_before() -> None:
    optimizer = build_optimizer(two_layers(), 2e-5, 0.0)
    assert [len(g["params"]) for g in optimizer.param_groups] == [2, 2]


def test_frozen_parameters_are_left_out_and_a_pattern_must_match() -> None:
    module = two_layers()
    for parameter in module["static"].parameters():
        parameter.requires_grad_(False)
    with pytest.raises(ValueError, match="'static' matches no trainable parameter"):
        build_optimizer(module, 2e-5, 0.01, {"static": 1e-3})
    with pytest.raises(ValueError, match=r"learning_rate_mapping\['x'\] must be positive"):
        TrainingConfig(learning_rate_mapping={"x": 0.0})
