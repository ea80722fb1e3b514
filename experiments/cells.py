"""The paper's experiments as cells: Tables 1, 2, 5, 6 and 7 and the cost argument.

Each cell is a function of JSON-able parameters (its cache key, with the code) that returns its
figures. Cells that need a trained model ask the :class:`ModelStore`, which trains it once with the
same ``sbert train`` command a user would type, so Table 1's NLI model is also Table 5's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from experiments.models import ModelStore, TrainedModel
from experiments.runner import Cell
from experiments.scale import Scale
from experiments.speed import (
    cross_versus_bi_cost,
    encode_in_given_order,
    median_seconds,
    most_similar_pair_seconds,
    sentences_per_second,
)
from sbert.base.options import PAPER_POOLING_MODES
from sbert.data import MissingDataError, distinct_snli_sentences, read_stsb
from sbert.encoder.model import SentenceEncoder
from sbert.evaluation.baselines import AveragedGloVe
from sbert.evaluation.senteval import TRANSFER_TASKS, evaluate_transfer
from sbert.evaluation.similarity import Encoder
from sbert.evaluation.sts import STS_SETS, evaluate_sts
from sbert.losses import CONCATENATION_PARTS, PAPER_CONCATENATION

# Rough rates on the reference machine (2 cores), for the time-left estimate only.
TRAIN_PAIRS_PER_S = 90.0
STS_EVAL_S = 60.0
TRANSFER_TASK_S = 55.0

# Table 6's seven concatenations, in the paper's order.
CONCATENATIONS = ("u,v", "|u-v|", "u*v", "|u-v|,u*v", "u,v,u*v", "u,v,|u-v|", "u,v,|u-v|,u*v")
PAPER_MODE = ",".join(PAPER_CONCATENATION)
NLI_PAIRS = 9824  # SNLI test, the NLI recipe's default training data
# Dimensions of the static model distilled for the Table 7 speed rows (issue #26).
STATIC_DIMENSIONS = 256


@dataclass
class Context:
    """What every cell needs besides its parameters."""

    scale: Scale
    data_dir: str
    models: ModelStore
    base: str | None = None


def build_cells(context: Context) -> list[Cell]:
    """Every cell, cheapest first, so that an early stop still leaves a useful report."""
    return [
        *table1_cells(context),
        *table7_cells(context),
        *table2_cells(context),
        *table6_cells(context),
        *table5_cells(context),
    ]


def concatenation_slug(mode: str) -> str:
    """A file-name-safe name for a concatenation: ``u,v,|u-v|`` → ``u_v_absdiff``."""
    return mode.replace("|u-v|", "absdiff").replace("u*v", "prod").replace(",", "_")


# -- Table 1: unsupervised STS ---------------------------------------------------------------------


def table1_cells(context: Context) -> list[Cell]:
    scale, data = context.scale, context.data_dir
    sets = list(scale.sts_sets or STS_SETS)
    common: dict[str, Any] = {"sets": sets, "data": data, "base": context.base}
    cells = [Cell("table1/glove", partial(_sts_of_glove, context), {"sets": sets, "data": data}, 30)]
    for pooling in PAPER_POOLING_MODES:
        params = {**common, "pooling": pooling}
        cells.append(Cell(f"table1/bundled-{pooling}", partial(_sts_of_base, context), params, STS_EVAL_S))
    nli = {**common, "pairs": scale.nli_pairs, "bf16": scale.bf16}
    estimate = (scale.nli_pairs or NLI_PAIRS) / TRAIN_PAIRS_PER_S + STS_EVAL_S
    cells.append(Cell("table1/nli", partial(_sts_of_nli, context), nli, estimate))
    return cells


def _sts_of_glove(context: Context, sets: list[str], data: str) -> dict[str, Any]:
    return {"model": "Avg. GloVe 6B 50d", **sts_scores(AveragedGloVe.from_package(), data, sets)}


def _sts_of_base(
    context: Context, sets: list[str], data: str, base: str | None, pooling: str
) -> dict[str, Any]:
    model = SentenceEncoder.from_pretrained(base, pooling=pooling)
    return {"model": f"{model.name}, {pooling} pooling", **sts_scores(model, data, sets)}


def _sts_of_nli(
    context: Context, sets: list[str], data: str, base: str | None, pairs: int | None, bf16: bool
) -> dict[str, Any]:
    trained = context.models.nli(pairs)
    return {
        **_trained_summary(trained),
        **sts_scores(SentenceEncoder.from_pretrained(trained.path), data, sets),
    }


def sts_scores(encoder: Encoder, data_dir: str, sets: Sequence[str]) -> dict[str, Any]:
    """Spearman × 100 of the cosine per STS set; a set missing from the data directory is listed, not fatal."""
    spearman: dict[str, float] = {}
    missing: dict[str, str] = {}
    for name in sets:
        try:
            spearman[name] = evaluate_sts(encoder, data_dir, [name])[name]["all"]["spearman_cosine"]
        except MissingDataError as error:
            missing[name] = str(error)
    if not spearman:
        raise MissingDataError("no STS set found: " + "; ".join(missing.values()))
    return {"spearman": spearman, "missing": missing}


# -- Table 2: STSb, supervised ---------------------------------------------------------------------


def table2_cells(context: Context) -> list[Cell]:
    scale = context.scale
    common: dict[str, Any] = {"data": context.data_dir, "base": context.base, "bf16": scale.bf16}
    stsb = {**common, "pairs": scale.stsb_pairs, "epochs": scale.stsb_epochs}
    stsb_s = (scale.stsb_pairs or 5749) * scale.stsb_epochs / TRAIN_PAIRS_PER_S + 30
    nli_s = (scale.nli_pairs or NLI_PAIRS) / TRAIN_PAIRS_PER_S
    cells = []
    for seed in scale.seeds:
        cells.append(Cell(f"table2/stsb-seed{seed}", partial(_stsb, context), {**stsb, "seed": seed}, stsb_s))
    for number, seed in enumerate(scale.seeds):
        params = {**stsb, "seed": seed, "nli_pairs": scale.nli_pairs}
        estimate = stsb_s + (nli_s if number == 0 else 0)
        cells.append(Cell(f"table2/nli-stsb-seed{seed}", partial(_nli_stsb, context), params, estimate))
    for seed in scale.seeds:
        params = {**stsb, "seed": seed, "lr": scale.cross_lr}
        cells.append(Cell(f"table2/cross-seed{seed}", partial(_cross, context), params, 1.5 * stsb_s))
    return cells


def _stsb(context: Context, seed: int, pairs: int | None, epochs: int, **_: Any) -> dict[str, Any]:
    trained = context.models.stsb(seed, pairs, epochs)
    return {**_trained_summary(trained), "test": trained.results["stsb_test_spearman_cosine"]}


def _nli_stsb(
    context: Context, seed: int, pairs: int | None, epochs: int, nli_pairs: int | None, **_: Any
) -> dict[str, Any]:
    nli = context.models.nli(nli_pairs)
    trained = context.models.stsb(seed, pairs, epochs, base=nli.path)
    return {**_trained_summary(trained), "test": trained.results["stsb_test_spearman_cosine"]}


def _cross(
    context: Context, seed: int, pairs: int | None, epochs: int, lr: float, **_: Any
) -> dict[str, Any]:
    trained = context.models.cross_stsb(seed, pairs, epochs, lr)
    return {**_trained_summary(trained), "test": trained.results["stsb_test_spearman"]}


def _trained_summary(trained: TrainedModel) -> dict[str, Any]:
    results = trained.results
    dev = results.get("best_dev_spearman_cosine", results.get("best_dev_spearman"))
    return {"command": trained.command, "dev": dev, "train_seconds": results["seconds"]}


# -- Table 5: SentEval -----------------------------------------------------------------------------


def table5_cells(context: Context) -> list[Cell]:
    scale = context.scale
    tasks = list(scale.transfer_tasks or TRANSFER_TASKS)
    # SentEval's own protocol, so that the rows compare with the paper's Table 5.
    common = {"tasks": tasks, "data": context.data_dir, "protocol": "senteval"}
    trained = {"base": context.base, "bf16": scale.bf16}
    estimate = len(tasks) * TRANSFER_TASK_S
    rows: list[tuple[str, dict[str, Any]]] = [
        ("glove", {}),
        ("bundled", {"base": context.base}),
        ("nli", {**trained, "pairs": scale.nli_pairs}),
        ("stsb", {**trained, "pairs": scale.stsb_pairs, "epochs": scale.stsb_epochs, "seed": scale.seeds[0]}),
    ]
    return [
        Cell(f"table5/{row}", partial(_transfer, context, row), {**common, **extra}, estimate)
        for row, extra in rows
    ]


def _transfer(
    context: Context, row: str, tasks: list[str], data: str, protocol: str, **params: Any
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    encoder: Encoder
    if row == "glove":
        encoder = AveragedGloVe.from_package()
        summary["model"] = "Avg. GloVe 6B 50d"
    elif row == "bundled":
        encoder = SentenceEncoder.from_pretrained(params["base"])
        summary["model"] = encoder.name
    else:
        scale = context.scale
        trained = (
            context.models.nli(params["pairs"])
            if row == "nli"
            else context.models.stsb(params["seed"], params["pairs"], params["epochs"])
        )
        encoder = SentenceEncoder.from_pretrained(trained.path)
        summary = {"model": f"{row} ({scale.name} scale)", **_trained_summary(trained)}
    return {**summary, **transfer_scores(encoder, data, tasks, protocol)}


def transfer_scores(
    encoder: Encoder, data_dir: str, tasks: Sequence[str], protocol: str = "senteval"
) -> dict[str, Any]:
    """Accuracy × 100 per SentEval task (and MRPC F1); a task missing from the data directory is listed."""
    scores: dict[str, dict[str, Any]] = {}
    missing: dict[str, str] = {}
    for task in tasks:
        try:
            result = evaluate_transfer(encoder, data_dir, [task], protocol=protocol)[task]
        except MissingDataError as error:
            missing[task] = str(error)
            continue
        scores[task] = {key: result[key] for key in ("accuracy", "f1") if key in result}
    if not scores:
        raise MissingDataError("no SentEval task found: " + "; ".join(missing.values()))
    return {"tasks": scores, "missing": missing, "protocol": protocol}


# -- Table 6: ablation, scored on STSb dev -----------------------------------------------------------


def table6_cells(context: Context) -> list[Cell]:
    scale = context.scale
    common = {"data": context.data_dir, "base": context.base, "bf16": scale.bf16}
    nli = {**common, "pairs": scale.ablation_nli_pairs}
    nli_s = (scale.ablation_nli_pairs or NLI_PAIRS) / TRAIN_PAIRS_PER_S + 10
    stsb = {**common, "pairs": scale.ablation_stsb_pairs, "epochs": scale.ablation_stsb_epochs}
    stsb_s = (scale.ablation_stsb_pairs or 5749) * scale.ablation_stsb_epochs / TRAIN_PAIRS_PER_S + 20
    cells = []
    for pooling in PAPER_POOLING_MODES:
        params = {**nli, "pooling": pooling}
        cells.append(Cell(f"table6/nli-{pooling}", partial(_ablation_nli, context), params, nli_s))
    for mode in CONCATENATIONS:
        if mode == PAPER_MODE:
            continue  # the same run as table6/nli-mean
        params = {**nli, "concatenation": mode}
        cells.append(
            Cell(f"table6/concat-{concatenation_slug(mode)}", partial(_ablation_nli, context), params, nli_s)
        )
    for pooling in PAPER_POOLING_MODES:
        params = {**stsb, "pooling": pooling, "seed": scale.seeds[0]}
        cells.append(Cell(f"table6/stsb-{pooling}", partial(_ablation_stsb, context), params, stsb_s))
    return cells


def _ablation_nli(
    context: Context, pairs: int | None, pooling: str = "mean", concatenation: str = PAPER_MODE, **_: Any
) -> dict[str, Any]:
    unknown = set(concatenation.split(",")) - set(CONCATENATION_PARTS)
    if unknown:
        raise ValueError(f"unknown concatenation part(s) {sorted(unknown)}")
    # The paper's setting (mean pooling, (u, v, |u−v|)) passes no option, so it is one shared run.
    trained = context.models.nli(
        pairs,
        pooling=None if pooling == "mean" else pooling,
        concatenation=None if concatenation == PAPER_MODE else concatenation,
    )
    return {**_trained_summary(trained), "pooling": pooling, "concatenation": concatenation}


def _ablation_stsb(
    context: Context, pairs: int | None, epochs: int, pooling: str, seed: int, **_: Any
) -> dict[str, Any]:
    trained = context.models.stsb(seed, pairs, epochs, pooling=None if pooling == "mean" else pooling)
    return {**_trained_summary(trained), "pooling": pooling}


# -- Table 7: speed, and the cost argument ---------------------------------------------------------


def table7_cells(context: Context) -> list[Cell]:
    scale = context.scale
    common = {"data": context.data_dir, "base": context.base, "repeats": scale.speed_repeats}
    speed = {**common, "sentences": scale.speed_sentences, "threads": torch.get_num_threads()}
    cost = {**speed, "pairs": scale.cross_pairs, "mining_sentences": scale.mining_sentences}
    # The static row (issue #26): a model distilled from the base, no corpus, no transformer at inference.
    speed_static = {**speed, "static_dimensions": STATIC_DIMENSIONS}
    return [
        Cell("table7/speed", partial(_speed, context), speed_static, 30 * scale.speed_repeats + 30),
        Cell("table7/cost", partial(_cost, context), cost, 40 * scale.speed_repeats),
    ]


def _speed(
    context: Context,
    data: str,
    base: str | None,
    repeats: int,
    sentences: int | None,
    static_dimensions: int = STATIC_DIMENSIONS,
    **_: Any,
) -> dict[str, Any]:
    from sbert.static.distill import distill_table

    texts = [s for pair in read_stsb("test", data) for s in (pair.sentence1, pair.sentence2)][:sentences]
    exact = SentenceEncoder.from_pretrained(base, precision="float32")
    fast = SentenceEncoder.from_pretrained(base)
    glove = AveragedGloVe.from_package()
    dimensions = min(static_dimensions, exact.dim)
    static = distill_table(exact, dimensions, show_progress_bar=False)[0]
    encoders: dict[str, Callable[[Sequence[str]], Any]] = {
        "Avg. GloVe 6B 50d": glove.encode,
        "float32, no smart batching": partial(encode_in_given_order, exact),
        "float32, smart batching": partial(exact.encode, show_progress_bar=False),
        f"{fast.precision}, smart batching": partial(fast.encode, show_progress_bar=False),
        f"static {dimensions}-d distilled from it (no corpus)": static.encode,
    }
    return {
        "model": exact.name,
        "sentences": len(texts),
        "threads": torch.get_num_threads(),
        "sentences_per_second": sentences_per_second(encoders, texts, repeats),
    }


def _cost(
    context: Context,
    data: str,
    base: str | None,
    repeats: int,
    pairs: int | None,
    mining_sentences: int,
    **_: Any,
) -> dict[str, Any]:
    from sbert.cross_encoder import CrossEncoder

    scored = [(p.sentence1, p.sentence2) for p in read_stsb("test", data)][:pairs]
    torch.manual_seed(0)  # the regression head is new; its weights do not change the speed
    cross = CrossEncoder.from_pretrained(base, num_labels=1)
    seconds = median_seconds({"cross": lambda: cross.predict(scored, show_progress_bar=False)}, repeats)
    bi = SentenceEncoder.from_pretrained(base)
    sentences = distinct_snli_sentences(mining_sentences, data)
    bi_seconds = most_similar_pair_seconds(bi, sentences, repeats)
    return {
        "bi_precision": bi.precision,
        "cross_precision": "float32",
        "timed_pairs": len(scored),
        **cross_versus_bi_cost(len(scored) / seconds["cross"], bi_seconds, len(sentences)),
    }
