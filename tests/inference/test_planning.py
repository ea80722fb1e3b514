"""encode() through the runner its plan names: the GPU pipeline's branch (texts tokenized a chunk ahead
on host threads), which only a CUDA device selects, run here on the CPU against sentence-transformers."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from sbert import SentenceEncoder
from sbert.inference.cuda.pipeline import SMALL_INPUT, CudaPipeline, PipelineOptions
from sbert.inference.runner import RunOptions

WORDS = ["a", "man", "plays", "the", "guitar", "while", "dog", "runs", "in", "park", "rain", "sky"]


def test_encode_through_the_gpu_pipeline_gives_sentence_transformers_vectors_and_counts_truncation(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 30)))) for _ in range(2 * SMALL_INPUT)]
    reference = SentenceTransformer(str(tiny_model_dir), device="cpu")
    reference.max_seq_length = 16
    expected = reference.encode(sentences, batch_size=64)
    too_long = sum(len(reference.tokenizer(s)["input_ids"]) > 16 for s in sentences)
    assert 0 < too_long < len(sentences)
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    model.max_seq_length = 16
    pipeline = CudaPipeline(
        model.transformer, model.pooling, model.after_pooling, torch.float32, PipelineOptions()
    )
    monkeypatch.setattr(model.runners, "select", lambda *args, **kwargs: pipeline)
    run_texts, calls = pipeline.run_texts, []
    monkeypatch.setattr(
        pipeline, "run_texts", lambda *args, **kwargs: calls.append(1) or run_texts(*args, **kwargs)
    )
    with caplog.at_level(logging.WARNING, logger="sbert"):
        got = model.encode(sentences, batch_size=7)
    assert calls == [1]  # the texts went to the pipeline, not token ids to its run()
    np.testing.assert_allclose(got, expected, atol=1e-5)
    notices = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert notices == [
        f"{too_long} of {len(sentences)} inputs were longer than max_seq_length=16 tokens and were truncated"
    ]


def test_the_planning_is_the_encoders_and_the_plan_follows_the_weights(tiny_encoder: SentenceEncoder) -> None:
    import copy

    from sbert.inference.planning import Planning

    model = copy.deepcopy(tiny_encoder)
    planning = model.planning
    assert isinstance(planning, Planning) and planning.input_module is model.input_module
    assert model.plan is planning.plan and model.plan.device == str(model.device) == "cpu"
    model.requested_backend, model.name = "torch", "renamed"  # set on the planning, under the encoder's names
    assert (planning.requested_backend, planning.name) == ("torch", "renamed")
    model.to("meta")  # no second device here: the meta device stands in for one
    assert model.device.type == planning.device.type == "meta"
    assert model.plan.device == "meta" and model.plan is not tiny_encoder.plan
    assert tiny_encoder.plan.device == "cpu"  # the copy's planning is its own


def test_a_planning_needs_only_the_modules(tiny_encoder: SentenceEncoder) -> None:
    from sbert.inference.planning import Planning

    planning = Planning(tiny_encoder.input_module, tiny_encoder.pooling, tiny_encoder.layers, "alone")
    planning.requested_precision, planning.requested_backend = "float32", "torch"
    plan, embeddings = planning.run(planning.plan, ["a man plays the guitar"], RunOptions(), False)
    assert (plan.precision, plan.backend, plan.device) == ("float32", "torch", "cpu")
    torch.testing.assert_close(embeddings, torch.from_numpy(tiny_encoder.encode(["a man plays the guitar"])))
