"""Every compiled graph proves itself before it is used.

A graph that OpenVINO converted can be wrong where PyTorch is right (observed: ModernBERT's padded
rows came back NaN whenever a long sentence shared their batch). So before a graph encodes anything,
it encodes a probe batch with padding, a long input and an empty string, and its pooled vectors are
compared with PyTorch float32's. A graph that fails is not used: the caller falls back to PyTorch.
"""

from __future__ import annotations

import torch
from torch import Tensor

# float32 graphs: measured ≤ 1.6e-6 (bundled model) and ≤ 3.6e-7 (tiny BERT) from PyTorch; this
# bound, relative to the vectors' largest entry, leaves room for other kernels yet catches any bug.
FLOAT32_TOLERANCE = 1e-4
# Lower precisions are judged by cosine distance, per probe row. bf16: the README's bound. int8 and
# mixed: the bundled model's int8 graph gives 0.023 on a 256-token sentence (2026-11-25, AMD EPYC);
# 0.05 still refuses a broken calibration (random vectors are ~1 apart).
COSINE_DISTANCE_BOUNDS = {"bfloat16": 0.005, "mixed": 0.05, "int8": 0.05}
# One score per row (a one-label cross-encoder) has no direction: such rows are judged by their
# largest difference relative to the largest score. The bf16 graph's probe logits of the bundled
# model with a random one-label head were 1.6% off (2026-11-27, AMD EPYC); a broken graph, ~100%.
SCORE_BOUNDS = {"bfloat16": 0.1, "mixed": 0.3, "int8": 0.3}


class UnfaithfulGraph(RuntimeError):
    """A compiled graph whose probe vectors are not PyTorch float32's (NaN, inf or drift)."""


def probe_texts() -> list[str]:
    """The probe batch: an empty string, a short sentence and one past most models' token limit
    (cut to ``max_seq_length``), so that rows are padded beside a long one."""
    long = " ".join(f"The {n}th sentence of a long document goes on about nothing." for n in range(60))
    return ["", "A man is playing a guitar.", long]


def check_probe(expected: Tensor, got: Tensor, precision: str, graph: str) -> None:
    """Raise :class:`UnfaithfulGraph` unless ``got`` (probe rows, dim) is within ``precision``'s
    bound of PyTorch float32's ``expected``; the message names the graph, the row and the figure."""
    bad_rows = (~torch.isfinite(got)).any(dim=1).nonzero().flatten().tolist()
    if bad_rows:
        raise UnfaithfulGraph(f"the {graph} gave NaN or inf for probe row {bad_rows[0]}")
    if precision == "float32":
        difference = float((got - expected).abs().max())
        allowed = FLOAT32_TOLERANCE * max(1.0, float(expected.abs().max()))
        if difference > allowed:
            raise UnfaithfulGraph(
                f"the {graph} differs from PyTorch by {difference:.2g} (allowed {allowed:.2g})"
            )
        return
    if expected.shape[1] == 1:
        difference = float((got - expected).abs().max())
        allowed = SCORE_BOUNDS[precision] * float(expected.abs().max())
        if difference > allowed:
            raise UnfaithfulGraph(
                f"the {graph} in {precision} differs from PyTorch float32 by {difference:.3g} "
                f"(allowed {allowed:.3g}: {SCORE_BOUNDS[precision]} of the largest score)"
            )
        return
    distances = 1 - torch.nn.functional.cosine_similarity(got, expected, dim=1)  # (rows,)
    # A zero vector has no direction: cosine calls zero against zero distance 1, but the graph agrees.
    both_zero = (got.abs().amax(dim=1) == 0) & (expected.abs().amax(dim=1) == 0)
    distances = distances.masked_fill(both_zero, 0.0)
    worst = int(distances.argmax())
    bound = COSINE_DISTANCE_BOUNDS[precision]
    if float(distances[worst]) > bound:
        raise UnfaithfulGraph(
            f"the {graph} in {precision} is {float(distances[worst]):.3g} in cosine distance from "
            f"PyTorch float32 on probe row {worst} (allowed {bound})"
        )
