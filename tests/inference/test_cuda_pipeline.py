"""The GPU encode pipeline, run on the CPU: sentence-transformers' vectors to 1e-5, in input order,
whatever the batching (sentences, a token budget, CUDA-graph buckets) and for models it cannot unpad."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from tests.conftest import gpu_sentences

from sbert import SentenceEncoder
from sbert.inference.cuda.graphs import GraphedForward, bucket_padded, bucket_shape
from sbert.inference.cuda.pipeline import CudaPipeline, PipelineOptions, RunOptions


def _sentences(count: int, seed: int = 0) -> list[str]:
    return gpu_sentences(count, seed, longest=39)


def _pipeline(model: SentenceEncoder, options: PipelineOptions | None = None) -> CudaPipeline:
    return CudaPipeline(model.transformer, model.pooling, model.after_pooling, torch.float32, options)


def _run(model: SentenceEncoder, sentences: list[str], pipeline: CudaPipeline, **run: int) -> np.ndarray:
    texts, prompt_length = model.with_prompt(sentences)
    ids = model.token_ids(texts).ids
    return pipeline.run(ids, RunOptions(prompt_length=prompt_length, **run), lambda done: None).numpy()


@pytest.mark.parametrize(
    ("options", "run"),
    [
        (PipelineOptions(), {"batch_size": 7}),  # batches of sentences, as on the CPU
        (PipelineOptions(max_batch_tokens=90), {}),  # batches by tokens, as on CUDA
        (PipelineOptions(graphs=True), {"batch_size": 5}),  # CUDA-graph buckets, without the graphs
        (PipelineOptions(max_batch_tokens=400, graphs=True), {"max_tokens": 60}),
    ],
    ids=["sentences", "token-budget", "buckets", "budget-capped-by-max-tokens"],
)
def test_the_pipeline_gives_sentence_transformers_vectors(
    tiny_model_dir: Path, options: PipelineOptions, run: dict[str, int]
) -> None:
    sentences = _sentences(60)
    expected = SentenceTransformer(str(tiny_model_dir), device="cpu").encode(sentences, batch_size=64)
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    np.testing.assert_allclose(_run(model, sentences, _pipeline(model, options), **run), expected, atol=1e-5)


def test_prompts_pooled_or_left_out_as_sentence_transformers_does(prompted_model_dir: Path) -> None:
    sentences = _sentences(20, seed=1)
    expected = SentenceTransformer(str(prompted_model_dir), device="cpu").encode(sentences)
    model = SentenceEncoder.from_pretrained(
        prompted_model_dir, device="cpu", precision="float32", backend="torch"
    )
    got = _run(model, sentences, _pipeline(model, PipelineOptions(max_batch_tokens=100)))
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_a_model_it_cannot_unpad_runs_padded_batches(tiny_model_dir: Path, tmp_path: Path) -> None:
    relu = shutil.copytree(tiny_model_dir, tmp_path / "relu")
    config = json.loads((relu / "config.json").read_text())
    (relu / "config.json").write_text(json.dumps(config | {"hidden_act": "relu"}))
    sentences = _sentences(30, seed=2)
    expected = SentenceTransformer(str(relu), device="cpu").encode(sentences)
    model = SentenceEncoder.from_pretrained(relu, device="cpu", precision="float32", backend="torch")
    pipeline = _pipeline(model, PipelineOptions(max_batch_tokens=80, graphs=True))
    assert pipeline.bert is None and pipeline.graphs is None
    np.testing.assert_allclose(_run(model, sentences, pipeline), expected, atol=1e-5)


def test_batches_are_assembled_on_a_host_thread_and_progress_counts_sentences(
    tiny_encoder: SentenceEncoder,
) -> None:
    pipeline = _pipeline(tiny_encoder, PipelineOptions(max_batch_tokens=50))
    assembled_on: set[str] = set()
    assemble = pipeline._assemble

    def spy(*args: object) -> object:
        assembled_on.add(threading.current_thread().name)
        return assemble(*args)  # type: ignore[arg-type]

    pipeline._assemble = spy  # type: ignore[method-assign]
    done: list[int] = []
    ids = tiny_encoder.token_ids(_sentences(40)).ids
    pipeline.run(ids, RunOptions(), done.append)
    assert sum(done) == 40 and len(done) == len(pipeline.batches([len(row) for row in ids], RunOptions()))
    assert len(done) > 1 and all(name.startswith("sbert-host") for name in assembled_on)


def test_bucket_padding_never_changes_a_vector(tiny_encoder: SentenceEncoder) -> None:
    pipeline = _pipeline(tiny_encoder, PipelineOptions(graphs=True))
    ids = tiny_encoder.token_ids(["a man plays the guitar", "rain", "the big red car"]).ids
    shape = bucket_shape(len(ids), max(map(len, ids)))
    assert shape == (4, 16)
    bucketed = GraphedForward(pipeline._padded_bert, torch.device("cpu"))
    with torch.inference_mode():
        got = bucketed(*bucket_padded(ids, shape, pipeline.pad_id), 0)[: len(ids)]
    expected = SentenceTransformer(str(tiny_encoder.source), device="cpu").encode(
        ["a man plays the guitar", "rain", "the big red car"], convert_to_tensor=True
    )
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


def test_the_encoder_rebuilds_its_pipeline_when_the_weights_change(tiny_encoder: SentenceEncoder) -> None:
    transformer = tiny_encoder.transformer
    first = tiny_encoder.runners._cuda_pipeline("float32", transformer)
    assert tiny_encoder.runners._cuda_pipeline("float32", transformer) is first
    with torch.no_grad():
        next(transformer.model.parameters()).add_(1.0)
    assert tiny_encoder.runners._cuda_pipeline("float32", transformer) is not first
    assert tiny_encoder.runners._cuda_pipeline("float16", transformer).dtype == torch.float16


def test_texts_tokenized_by_several_threads_a_chunk_ahead_give_sentence_transformers_vectors(
    tiny_model_dir: Path,
) -> None:
    sentences = _sentences(200, seed=4)
    expected = SentenceTransformer(str(tiny_model_dir), device="cpu").encode(sentences)
    model = SentenceEncoder.from_pretrained(
        tiny_model_dir, device="cpu", precision="float32", backend="torch"
    )
    tokenized_on: set[str] = set()
    pieces: list[int] = []

    def tokenize(piece: object) -> list[list[int]]:
        tokenized_on.add(threading.current_thread().name)
        pieces.append(len(piece))  # type: ignore[arg-type]
        return model.token_ids(piece).ids  # type: ignore[arg-type]

    pipeline = _pipeline(model, PipelineOptions(max_batch_tokens=70, tokenize_threads=3))
    got = pipeline.run_texts(sentences, tokenize, RunOptions(), lambda done: None, chunk=30)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-5)
    assert tokenized_on and all(name.startswith("sbert-tokenize") for name in tokenized_on)
    assert sorted(pieces, reverse=True)[:2] == [10, 10] and sum(pieces) == 200  # three pieces a chunk


def test_a_few_texts_are_tokenized_on_the_calling_thread(tiny_encoder: SentenceEncoder) -> None:
    tokenized_on: list[str] = []

    def tokenize(piece: object) -> list[list[int]]:
        tokenized_on.append(threading.current_thread().name)
        return tiny_encoder.token_ids(piece).ids  # type: ignore[arg-type]

    _pipeline(tiny_encoder).run_texts(["one query"], tokenize, RunOptions(), lambda done: None)
    assert tokenized_on == [threading.current_thread().name]


def test_encode_on_the_gpu_path_warns_of_truncation_once_and_keeps_the_training_mode(
    tiny_encoder: SentenceEncoder, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The GPU branch of encode(), run on the CPU (it is device-agnostic): the plan's runner is the pipeline.
    sentences = ["word " * 100, "rain", "word " * 80]
    expected = tiny_encoder.encode(sentences, compute_precision="float32")
    pipeline = tiny_encoder.runners._cuda_pipeline("float32", tiny_encoder.transformer)
    monkeypatch.setattr(tiny_encoder.runners, "select", lambda *args, **kwargs: pipeline)
    tiny_encoder.train()
    caplog.clear()
    with caplog.at_level("WARNING", logger="sbert"):
        got = tiny_encoder.encode(sentences, compute_precision="float32", show_progress_bar=False)
    assert tiny_encoder.training
    assert [r.getMessage() for r in caplog.records] == [
        "2 of 3 inputs were longer than max_seq_length=64 tokens and were truncated"
    ]
    np.testing.assert_allclose(got, expected, atol=1e-5)
    many = sentences * 40  # more than run_texts tokenizes inline: through its thread pool
    caplog.clear()
    with caplog.at_level("WARNING", logger="sbert"):
        tiny_encoder.encode(many, compute_precision="float32", show_progress_bar=False)
    assert [r.getMessage() for r in caplog.records] == [
        "80 of 120 inputs were longer than max_seq_length=64 tokens and were truncated"
    ]


def test_host_threads_are_made_once_per_pipeline_and_not_for_one_query(tiny_encoder: SentenceEncoder) -> None:
    pipeline = _pipeline(tiny_encoder, PipelineOptions(max_batch_tokens=60, tokenize_threads=2))
    pipeline.run_texts(
        ["one query"], lambda texts: tiny_encoder.token_ids(texts).ids, RunOptions(), lambda done: None
    )
    assert pipeline._pools == {}  # one query: no thread at all
    sentences = _sentences(120, seed=5)

    def tokenize(texts: object) -> list[list[int]]:
        return tiny_encoder.token_ids(texts).ids  # type: ignore[arg-type]

    pipeline.run_texts(sentences, tokenize, RunOptions(), lambda done: None, chunk=40)
    pools = dict(pipeline._pools)
    assert set(pools) == {"sbert-tokenize", "sbert-host"}
    before = threading.active_count()
    for _ in range(3):
        pipeline.run_texts(sentences, tokenize, RunOptions(), lambda done: None, chunk=40)
    assert pipeline._pools == pools and threading.active_count() == before  # the same pools, no new threads
