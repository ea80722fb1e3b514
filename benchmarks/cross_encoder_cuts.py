"""How the cross-encoder's pairs are cut into OpenVINO passes, and what else its float32 pass could
save: candidate variants of sbert's default ``CrossEncoder`` run timed against sentence-transformers'
``CrossEncoder.predict`` on the STSb test pairs, alternating every repeat, medians of the per-repeat
ratios (the model as ``cross_encoder_speed.py`` makes it). "whole last layer" is the body as it was
before 2026-11-29, every token through the last layer (on packed rows: before the packed first-token
body, also 2026-11-29); the other variants run the body as it is.
The "GPU pipeline on the CPU" pair runs the CUDA pipeline's unpadded float32 body here, with and
without the last layer for ``[CLS]`` alone: what that change saves in arithmetic, measured on the CPU.

Every sbert variant runs on already-tokenized pairs (tokenizing is the same for all and ~1% of a
call); sentence-transformers' side is its whole ``predict``. Each variant's logits are compared with
sentence-transformers' (max absolute difference).

    flock /tmp/sbert-heavy.lock python benchmarks/cross_encoder_cuts.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import CrossEncoder as TheirCrossEncoder

from alternating import alternating_rates
from cross_encoder_speed import saved_cross_encoder
from sbert import CrossEncoder
from sbert.base.batching import length_sorted_batches
from sbert.cross_encoder.engine import pair_ids
from sbert.data import read_stsb
from sbert.inference.cuda.pipeline import CudaPipeline, PipelineOptions
from sbert.inference.openvino import engine as openvino_engine
from sbert.inference.packing import packed_passes
from sbert.inference.runner import RunOptions
from sbert.modules import Transformer
from sparse_setup import cpu_name


def padded(model: CrossEncoder, ids: list[list[int]], options: RunOptions) -> Callable[[], np.ndarray]:
    runner = model.planning.runner(model.plan, False)[1]
    return lambda: runner.run(ids, options, lambda done: None).numpy()[:, 0]


def packed(model: CrossEncoder, ids: list[list[int]], row_tokens: int) -> Callable[[], np.ndarray]:
    model.planning.runner(model.plan, True)  # compiles the packed graph
    engine = model.planning.runners.openvino[model.plan.precision]
    passes = packed_passes([len(row) for row in ids], len(engine.requests), row_tokens=row_tokens)
    return lambda: engine.embed_packed(ids, passes).numpy()[:, 0]


def one_stream(path: str) -> CrossEncoder:
    """A model whose OpenVINO graph compiles as one stream over both threads (LATENCY)."""
    original = openvino_engine.compile_config

    def latency(*args: object) -> dict[str, object]:
        return {**original(*args), "PERFORMANCE_HINT": "LATENCY"}  # type: ignore[arg-type]

    model = CrossEncoder(path, device="cpu")
    openvino_engine.compile_config = latency  # type: ignore[assignment]
    try:
        model.predict([("A warm-up.", "Compiles it.")])
    finally:
        openvino_engine.compile_config = original
    return model


def whole_last_layer(path: str) -> CrossEncoder:
    """A model whose body computes its last layer for every token (sbert before 2026-11-29): the
    plain transformer's forward, whose graph caches under its own key."""
    model = CrossEncoder(path, device="cpu")
    transformer = model.input_module
    transformer.forward = partial(Transformer.forward, transformer)
    transformer.extra_repr = lambda: "output: every token's vector"
    model.predict([("A warm-up.", "Compiles it.")])
    return model


def whole_last_layer_packed(path: str) -> CrossEncoder:
    """A model whose packed rows run the last layer for every token (sbert before the packed
    first-token body): its pair model offers no ``packed_first_token_vectors``."""
    model = CrossEncoder(path, device="cpu")
    model.input_module.model.packed_first_token_vectors = None  # PackedTransformer reads None as absent
    return model


def gpu_pipeline(model: CrossEncoder, ids: list[list[int]], first_token: bool) -> Callable[[], np.ndarray]:
    """The GPU pipeline's body (unpadded BERT, float32) run on the CPU, batches of 32: its last layer
    for ``[CLS]`` alone (as on a GPU since 2026-11-29) or for every token (before); a CPU proxy of the
    arithmetic the change saves on a GPU."""
    pipeline = CudaPipeline(
        model.input_module, model.pooling, lambda pooled: pooled, torch.float32, PipelineOptions()
    )
    pipeline.first_token = first_token
    return lambda: pipeline.run(ids, RunOptions(32), lambda done: None).numpy()[:, 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--variants", nargs="+", default=None)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    pairs = [(p.sentence1, p.sentence2) for p in read_stsb("test", args.data_dir)][: args.limit]
    with tempfile.TemporaryDirectory() as folder:
        path = saved_cross_encoder(folder)
        model = CrossEncoder(path, device="cpu")
        model.predict(pairs[:8])
        ids = pair_ids(model.tokenize(pairs), model.input_module.vocab_size)
        lengths = [len(row) for row in ids]
        variants: dict[str, Callable[[], Callable[[], np.ndarray]]] = {
            "padded 32": lambda: padded(model, ids, RunOptions(32)),
            "padded 64": lambda: padded(model, ids, RunOptions(64)),
            "padded 16": lambda: padded(model, ids, RunOptions(16)),
            "padded 64, cost 24": lambda: padded(model, ids, RunOptions(64, batch_cost_tokens=24)),
            "packed 256": lambda: packed(model, ids, 256),
            "packed 64": lambda: packed(model, ids, 64),
            "whole last layer, packed 256": lambda: packed(whole_last_layer_packed(path), ids, 256),
            "one stream, padded 32": lambda: padded(one_stream(path), ids, RunOptions(32)),
            "whole last layer, padded 32": lambda: padded(whole_last_layer(path), ids, RunOptions(32)),
            "GPU pipeline on the CPU, float32": lambda: gpu_pipeline(model, ids, first_token=True),
            "GPU pipeline on the CPU, float32, whole last layer": lambda: gpu_pipeline(model, ids, False),
        }
        chosen = {name: make() for name, make in variants.items() if name in (args.variants or variants)}
        theirs = TheirCrossEncoder(path, device="cpu")
        reference = theirs.predict(
            pairs, batch_size=32, show_progress_bar=False, activation_fn=torch.nn.Identity()
        )
        runners: dict[str, Callable[[], object]] = dict(chosen)
        runners["sentence-transformers"] = lambda: theirs.predict(
            pairs, batch_size=32, show_progress_bar=False
        )
        for run in runners.values():
            run()
        rates = alternating_rates(runners, args.repeats, len(pairs))
        st = rates["sentence-transformers"]
        result = {
            "cpu": cpu_name(),
            "pairs": len(pairs),
            "real_tokens": sum(lengths),
            "padded_tokens_32": int(
                sum(len(b) * max(lengths[i] for i in b) for b in length_sorted_batches(lengths, 32))
            ),
            "pairs_per_second": {name: statistics.median(values) for name, values in rates.items()},
            "ratios": {name: [a / b for a, b in zip(rates[name], st)] for name in chosen},
            "max_abs_logit_difference": {
                name: float(np.abs(run() - reference).max()) for name, run in chosen.items()
            },
        }
        result["ratio_median"] = {name: statistics.median(v) for name, v in result["ratios"].items()}
    print(json.dumps(result, indent=1))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
