"""The CUDA-rules fixture itself (tests/cuda_rules.py): it refuses what CUDA refuses, lets through
what CUDA runs, and counts host synchronisations of tensors on the device, not of host tensors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from tests.cuda_rules import CudaRuleError, CudaRules


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_float32_layer_norm_weight_on_low_precision_activations_is_refused(
    cuda_rules: CudaRules, dtype: torch.dtype
) -> None:
    x = torch.randn(3, 8).to(dtype)
    name = "Half" if dtype == torch.float16 else "BFloat16"
    with pytest.raises(CudaRuleError, match=f"expected scalar type {name} but found Float"):
        F.layer_norm(x, (8,), torch.ones(8), torch.zeros(8))
    assert F.layer_norm(x, (8,), torch.ones(8, dtype=dtype), torch.zeros(8, dtype=dtype)).dtype == dtype


def test_mixed_matrix_products_attention_and_index_writes_are_refused(cuda_rules: CudaRules) -> None:
    half, full = torch.randn(4, 8).half(), torch.randn(8, 8)
    with pytest.raises(CudaRuleError, match="mm"):
        half @ full.t().half().float()
    query = torch.randn(1, 2, 4, 8).half()
    with pytest.raises(CudaRuleError, match="attention"):
        F.scaled_dot_product_attention(query, query, query, attn_mask=torch.zeros(1, 1, 4, 4))
    F.scaled_dot_product_attention(query, query, query, attn_mask=torch.ones(1, 1, 4, 4, dtype=torch.bool))
    with pytest.raises(CudaRuleError, match="index_copy"):
        torch.zeros(4, 8).index_copy_(0, torch.arange(4), half)
    assert (half + full[:4]).dtype == torch.float32  # elementwise ops promote on CUDA too: allowed


def test_a_sync_per_batch_is_counted_and_host_tensors_are_not(cuda_rules: CudaRules) -> None:
    weights = torch.randn(8, 8)
    cuda_rules.on_device(weights)
    host = torch.arange(5)
    assert int(host.sum()) == 10 and host.tolist()  # host tensors: no sync
    assert cuda_rules.syncs == []
    for _ in range(3):  # a batch loop that reads a value back each batch
        out = torch.randn(2, 8).to("cpu") @ weights  # moved to "the device", computed there
        float(out.sum())
    assert len(cuda_rules.syncs) == 3 and "test_cuda_rules.py" in cuda_rules.syncs[0].where
    cuda_rules.reset()
    kept = out.to("cpu", non_blocking=True)
    assert kept is not out and cuda_rules.syncs == [] and len(cuda_rules.downloads) == 1
    out[out > 0]  # boolean indexing: nonzero inside
    out.cpu()
    torch.nonzero(out)
    assert [sync.what for sync in cuda_rules.syncs] == [
        "aten.index",
        "a copy to the host",
        "aten.nonzero",
    ]
    cuda_rules.reset()
    assert float(kept.sum()) == pytest.approx(float(out.sum().cpu()))  # the host copy: no sync of its own
    assert [sync.what for sync in cuda_rules.syncs] == ["a copy to the host"]
