import numpy as np
import pytest
import torch

from sbert.embeddings.similarity import MATRIX, PAIRWISE, similarity_function

RNG = np.random.default_rng(0)
A = RNG.normal(size=(4, 5)).astype(np.float32)
B = RNG.normal(size=(3, 5)).astype(np.float32)


def test_matrix_values_against_numpy() -> None:
    cos = (A / np.linalg.norm(A, axis=1, keepdims=True)) @ (B / np.linalg.norm(B, axis=1, keepdims=True)).T
    euclid = -np.linalg.norm(A[:, None] - B[None], axis=2)
    manhattan = -np.abs(A[:, None] - B[None]).sum(axis=2)
    np.testing.assert_allclose(MATRIX["cosine"](A, B), cos, atol=1e-5)
    np.testing.assert_allclose(MATRIX["dot"](A, B), A @ B.T, atol=1e-5)
    np.testing.assert_allclose(MATRIX["euclidean"](A, B), euclid, atol=1e-4)
    np.testing.assert_allclose(MATRIX["manhattan"](A, B), manhattan, atol=1e-4)


@pytest.mark.parametrize("name", list(PAIRWISE))
def test_pairwise_is_matrix_diagonal(name: str) -> None:
    pairwise = PAIRWISE[name](A[:3], B)
    np.testing.assert_allclose(pairwise, np.diagonal(MATRIX[name](A[:3], B)), atol=1e-4)


def test_single_vectors_are_accepted() -> None:
    assert MATRIX["cosine"](A[0], B[0]).shape == (1, 1)


def test_unknown_name() -> None:
    with pytest.raises(ValueError, match="cosine, dot, euclidean, manhattan"):
        similarity_function("jaccard")


@pytest.mark.parametrize("function", [*MATRIX.values(), *PAIRWISE.values()])
def test_numpy_in_numpy_out_tensor_in_tensor_out(function) -> None:  # type: ignore[no-untyped-def]
    from_numpy = function(A[:3], B)
    assert isinstance(from_numpy, np.ndarray) and from_numpy.dtype == np.float32  # like encode()
    a = torch.from_numpy(A[:3]).requires_grad_()
    from_tensor = function(a, B)  # one tensor side is enough: the losses need gradients
    assert isinstance(from_tensor, torch.Tensor)
    np.testing.assert_allclose(from_tensor.detach().numpy(), from_numpy, atol=1e-6)
    from_tensor.sum().backward()
    assert a.grad is not None
