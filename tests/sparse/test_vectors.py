"""The three forms of sparse vectors convert into each other without loss, and bad input is named."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import torch

from sbert.sparse.vectors import active_dims, convert, keep_top_k, to_csr, to_pairs, to_torch


@pytest.fixture
def dense() -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    values = torch.rand(5, 40, generator=generator)
    return torch.where(values > 0.8, values, torch.zeros(()))  # (5, 40), about 8 active a row


@pytest.mark.parametrize("form", ["torch", "scipy", "pairs"])
def test_every_form_round_trips(dense: torch.Tensor, form: str) -> None:
    converted = convert(dense.to_sparse(), form)
    np.testing.assert_array_equal(to_csr(converted, dim=40).toarray(), dense.numpy())


def test_torch_form_is_coalesced_float32_coo(dense: torch.Tensor) -> None:
    tensor = to_torch(to_csr(dense))
    assert tensor.layout == torch.sparse_coo and tensor.is_coalesced() and tensor.dtype == torch.float32
    torch.testing.assert_close(tensor.to_dense(), dense, rtol=0, atol=0)


def test_inputs_of_every_kind(dense: torch.Tensor) -> None:
    expected = dense.numpy()
    for given in (dense, dense.to_sparse_csr(), dense.numpy(), scipy.sparse.coo_matrix(expected)):
        np.testing.assert_array_equal(to_csr(given).toarray(), expected)
    np.testing.assert_array_equal(to_csr(dense[0]).toarray(), expected[:1])  # one vector, 1-D


def test_pairs_are_ascending_without_zeros() -> None:
    ((indices, values),) = to_pairs(torch.tensor([[0.0, 3.0, 0.0, 1.0]]))
    assert indices.tolist() == [1, 3] and values.tolist() == [3.0, 1.0]
    assert indices.dtype == np.int64 and values.dtype == np.float32


def test_bad_pairs_are_named() -> None:
    with pytest.raises(ValueError, match="sparse vector 1: an index is outside 0..3"):
        to_csr([([0], [1.0]), ([4], [1.0])], dim=4)
    with pytest.raises(ValueError, match="sparse vector 0: indices"):
        to_csr([([0, 1], [1.0])])
    with pytest.raises(ValueError, match="expected 8"):
        to_csr(np.ones((1, 4)), dim=8)
    with pytest.raises(TypeError, match="not dict"):
        to_csr({"a": 1})
    with pytest.raises(ValueError, match="sparse_format 'coo'"):
        convert(np.ones((1, 2)), "coo")


def test_keep_top_k(dense: torch.Tensor) -> None:
    kept = keep_top_k(dense, 3)
    assert active_dims(kept).tolist() == [min(3, int(n)) for n in (dense > 0).sum(1)]
    assert torch.equal(kept.max(dim=1).values, dense.max(dim=1).values)
    assert keep_top_k(dense, None) is dense
    signed = torch.tensor(
        [[0.5, -3.0, 2.0, 0.0]]
    )  # by size, as sentence-transformers' select_max_active_dims
    assert keep_top_k(signed, 2).tolist() == [[0.0, -3.0, 2.0, 0.0]]
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_active_dims must be a positive whole number"):
            keep_top_k(dense, bad)  # type: ignore[arg-type]
