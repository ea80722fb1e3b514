"""``sbert train sparse`` end to end on a tiny random BertForMaskedLM and a slice of the NLI data:
the output is a SPLADE model that sentence-transformers loads with the same vectors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tests.losses.test_sparse_losses import build_tiny_mlm

from sbert import SparseEncoder
from sbert.cli import main


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_mlm(tmp_path_factory.mktemp("mlm"))


def test_train_sparse_on_nli_triplets_keeps_the_best_ndcg(
    mlm_dir: Path, data_dir: Path, tmp_path: Path
) -> None:
    output = tmp_path / "splade"
    argv = ["train", "sparse", "--base", str(mlm_dir), "--output", str(output), "--data-dir", str(data_dir)]
    argv += ["--max-pairs", "16", "--batch-size", "4", "--lr", "1e-3", "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    results = json.loads((output / "results.json").read_text())
    assert results["recipe"] == "sparse" and results["steps"] == 4 and results["loss"] == "splade"
    assert 0.0 <= results["best_dev_ndcg@10"] <= 1.0
    assert results["dev"]["dataset"] == "stsb-proxy" and results["dev"]["query_active_dims"] > 0
    log = [json.loads(line) for line in (output / "training_log.jsonl").open()]
    assert any("loss" in record for record in log)
    from sentence_transformers.sparse_encoder import SparseEncoder as STSparseEncoder

    model = SparseEncoder.from_pretrained(output, device="cpu", precision="float32")  # ST's float32: 1e-5
    ours = model.encode(["a man plays guitar"]).to_dense()
    theirs = STSparseEncoder(str(output), device="cpu").encode(["a man plays guitar"]).to_dense()
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_train_sparse_needs_a_base(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "sparse", "--output", str(tmp_path / "out"), "--no-progress", "--device", "cpu"]
    assert main(argv) != 0
    assert "needs --base" in capsys.readouterr().err
    assert main([*argv, "--base", "some-mlm", "--pooling", "mean"]) != 0
    assert "--pooling mean does not apply to the sparse recipe" in capsys.readouterr().err
