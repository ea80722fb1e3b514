import pytest
import torch

from sbert.modules import Dense, Normalize


def test_dense_applies_linear_then_tanh() -> None:
    dense = Dense(2, 1)
    with torch.no_grad():
        dense.linear.weight.copy_(torch.tensor([[1.0, 2.0]]))
        dense.linear.bias.fill_(0.5)
    out = dense(torch.tensor([[1.0, 1.0]]))
    assert torch.allclose(out, torch.tanh(torch.tensor([[3.5]])))


def test_dense_refuses_activation_outside_table() -> None:
    with pytest.raises(ValueError, match="unknown activation"):
        Dense(2, 2, activation="os.system")


def test_normalize_gives_unit_vectors() -> None:
    out = Normalize()(torch.tensor([[3.0, 4.0], [0.0, 2.0]]))
    assert torch.allclose(out.norm(dim=1), torch.ones(2))
