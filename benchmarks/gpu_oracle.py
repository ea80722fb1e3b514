"""The oracle of the GPU tests' CPU twins (tests/inference/test_gpu_paths.py), run on the GPU itself:
every GPU path in float32, bfloat16 and float16 against sentence-transformers' float32 vectors, each
path's worst cosine distance against its dtype's bound, and what ran (CUDA graphs captured or why
not, variable-length attention or padded blocks). A section of ``benchmarks/gpu.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

# Worst cosine distance to sentence-transformers float32: docs/guides/gpu.md (float16), the README
# (bfloat16); float32 to rounding.
BOUNDS = {"float32": 1e-5, "float16": 1e-4, "bfloat16": 5e-3}
SENTENCES = 512  # of the pass: several token-budget batches at 4,096 tokens
FEW = 8  # a CUDA-graph bucket's worth


def worst_distance(got: Any, expected: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(expected, dtype=np.float64)
    cosine = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
    return float((1 - cosine).max())


def pipeline_state(pipeline: Any) -> dict[str, Any]:
    """What a GPU pipeline ran: its dtype, the CUDA graphs it captured (or why capture failed) and
    whether variable-length attention runs."""
    if pipeline is None:
        return {"pipeline": None}
    graphs = pipeline.graphs
    bert = pipeline.bert
    return {
        "dtype": str(pipeline.dtype).removeprefix("torch."),
        "graphs_enabled": bool(graphs and graphs.enabled),
        "graphs_captured": len(graphs.graphs) if graphs else 0,
        "graph_failure": graphs.failure if graphs else None,
        "attention": "none (padded model)"
        if bert is None
        else ("variable-length" if bert.varlen is not None else "padded blocks"),
    }


def oracle(path: Path, sentences: list[str], device: str) -> dict[str, Any]:
    """Each path's worst cosine distance to sentence-transformers float32, per dtype, and whether
    each is within its bound (``all_within_bounds``)."""
    from sentence_transformers import SentenceTransformer

    texts = sentences[:SENTENCES]
    reference = SentenceTransformer(str(path), device=device)
    expected = np.asarray(reference.encode(texts, batch_size=64, convert_to_numpy=True), np.float32)
    found: dict[str, Any] = {}
    met = True
    for precision, bound in BOUNDS.items():
        for name, (run, want) in _paths(path, texts, expected, precision, device, found).items():
            key = f"{precision}_{name}"
            try:
                distance = worst_distance(run(), want)
            except Exception as error:  # one path's failure is a finding; the others still run
                found[key] = f"failed: {type(error).__name__}: {error}"
                met = False
                continue
            found[key] = distance
            met = met and distance <= bound
    found["all_within_bounds"] = met
    return found


def _paths(
    path: Path, texts: list[str], expected: np.ndarray, precision: str, device: str, found: dict[str, Any]
) -> dict[str, tuple[Callable[[], Any], np.ndarray]]:
    """Each GPU path at ``precision``: a call giving its vectors, and the reference rows they match.
    What ran (graphs, attention) is written into ``found`` as the calls run."""
    from sbert import SentenceEncoder
    from sbert.inference.cuda.pipeline import DTYPES, CudaPipeline, PipelineOptions, RunOptions
    from sbert.inference.cuda.unpadded import UnpaddedBert, padded_tokens, unpadded_batch
    from sbert.inference.fast_bert import FastBert

    # float16 is what ``auto`` plans on a GPU with tensor cores; it cannot be asked for by name.
    asked = "auto" if precision == "float16" else precision
    model = SentenceEncoder.from_pretrained(path, device=device, precision=asked, backend="torch")
    found[f"{precision}_encode_plans"] = model.plan.precision
    dtype, network = DTYPES[precision], model.transformer.model
    ids = model.token_ids(texts).ids

    def pipeline(**options: Any) -> CudaPipeline:
        return CudaPipeline(
            model.transformer, model.pooling, model.after_pooling, dtype, PipelineOptions(**options)
        )

    graphed, eager = pipeline(graphs=True), pipeline(graphs=False, max_batch_tokens=4096)

    def run(pipe: CudaPipeline, count: int | None = None) -> Callable[[], Any]:
        def call() -> Any:
            vectors = pipe.run(ids[:count], RunOptions(), lambda done: None)
            found[f"{precision}_pipeline_graphs_{pipe.graphs is not None}"] = pipeline_state(pipe)
            return vectors

        return call

    def encode() -> Any:
        vectors = model.encode(texts)
        built = model.runners.pipeline
        found[f"{precision}_encode_pipeline"] = pipeline_state(built[1] if built else None)
        return vectors

    def fast_bert() -> np.ndarray:
        features = {k: v.to(device) for k, v in model.transformer.collate(ids[:64]).items()}
        with torch.inference_mode():
            tokens = FastBert(network, dtype)(features["input_ids"], features["attention_mask"])
            return model.after_pooling(model.pooling(tokens, features["attention_mask"])).cpu().numpy()

    def unpadded() -> np.ndarray:
        bert = UnpaddedBert(network, dtype)
        batch = unpadded_batch(ids[:64]).to(torch.device(device))
        with torch.inference_mode():
            pooled = model.pooling(padded_tokens(bert(batch), batch), batch.token_mask)
            found[f"{precision}_unpadded_attention"] = "variable-length" if bert.varlen else "padded blocks"
            return model.after_pooling(pooled).cpu().numpy()

    return {
        "encode": (encode, expected),
        "graphs_few": (run(graphed, FEW), expected[:FEW]),
        "one_query": (run(graphed, 1), expected[:1]),
        "no_graphs_budget_4096": (run(eager), expected),
        "fast_bert_padded": (fast_bert, expected[:64]),
        "unpadded_bert": (unpadded, expected[:64]),
    }
