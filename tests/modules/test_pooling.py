import pytest
import torch

from sbert.modules import Pooling

TOKENS = torch.tensor([[[1.0, -5.0], [3.0, -1.0], [100.0, 100.0]], [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]])
MASK = torch.tensor([[1, 1, 0], [1, 0, 0]])  # padding holds the largest values: it must never count


def test_mean_ignores_padding() -> None:
    assert torch.equal(Pooling(2, "mean")(TOKENS, MASK), torch.tensor([[2.0, -3.0], [2.0, 2.0]]))


def test_max_never_picks_padding() -> None:
    assert torch.equal(Pooling(2, "max")(TOKENS, MASK), torch.tensor([[3.0, -1.0], [2.0, 2.0]]))


def test_cls_takes_first_token() -> None:
    assert torch.equal(Pooling(2, "cls")(TOKENS, MASK), torch.tensor([[1.0, -5.0], [2.0, 2.0]]))


def test_mode_is_case_insensitive() -> None:
    assert Pooling(2, "MEAN").mode == "mean"


def test_unknown_mode_lists_choices() -> None:
    with pytest.raises(ValueError, match="mean, cls, max"):
        Pooling(2, "median")


@pytest.mark.parametrize("mode", ["mean", "cls", "max"])
def test_config_round_trip(mode: str) -> None:
    pooling = Pooling.from_config(Pooling(384, mode).config())
    assert (pooling.dim, pooling.mode) == (384, mode)


def test_config_with_two_modes_is_refused() -> None:
    config = Pooling(8, "mean").config() | {"pooling_mode_cls_token": True}
    with pytest.raises(ValueError, match="exactly one"):
        Pooling.from_config(config, source="x/config.json")
