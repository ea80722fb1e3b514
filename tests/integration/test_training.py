"""``sbert train stsb`` on the bundled model (a few steps): the output loads in sbert and sentence-transformers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sbert import SentenceEncoder
from sbert.cli import main

pytestmark = pytest.mark.integration


def test_train_stsb_few_steps_gives_a_model_both_libraries_load(data_dir: Path, tmp_path: Path) -> None:
    output = tmp_path / "stsb"
    argv = ["train", "stsb", "--output", str(output), "--max-pairs", "48", "--epochs", "1"]
    assert main([*argv, "--data-dir", str(data_dir), "--no-progress", "--device", "cpu"]) == 0
    results = json.loads((output / "results.json").read_text())
    assert results["steps"] == 3
    assert results["best_dev_spearman_cosine"] > 80  # the bundled model starts near 87 on STSb dev
    assert results["stsb_test_spearman_cosine"] > 78
    sentences = ["A man is playing a guitar.", "A cat sleeps on the sofa."]
    ours = SentenceEncoder.from_pretrained(output, device="cpu", precision="float32").encode(sentences)
    theirs = SentenceTransformer(str(output), device="cpu").encode(sentences)
    assert np.allclose(ours, theirs, atol=1e-5)


@pytest.mark.parametrize("recipe", ["nli-stsb", "triplet"])
def test_recipes_run_end_to_end_on_a_tiny_bert(
    recipe: str, data_dir: Path, trainable_model_dir: Path, tmp_path: Path
) -> None:
    output = tmp_path / recipe
    argv = ["train", recipe, "--base", str(trainable_model_dir), "--output", str(output), "--max-pairs", "32"]
    assert (
        main([*argv, "--epochs", "1", "--data-dir", str(data_dir), "--no-progress", "--device", "cpu"]) == 0
    )
    results = json.loads((output / "results.json").read_text())
    assert results["recipe"] == ("stsb" if recipe == "nli-stsb" else recipe)
    assert np.isfinite(results["stsb_test_spearman_cosine"])
    if recipe == "nli-stsb":
        assert json.loads((output / "nli" / "results.json").read_text())["recipe"] == "nli"
