"""The ``sparse`` recipe: fine-tune a SPLADE sparse encoder with sbert's Trainer.

- Model: ``--base``, a SPLADE model (sentence-transformers' SparseEncoder folder) or a plain
  ``*ForMaskedLM`` folder, which loads as MLM transformer + SPLADE max pooling.
- Data: the (anchor, positive[, negative]) rows of ``--train``, else (premise, entailment,
  contradiction) triplets of the NLI data at hand (as the ``triplet`` recipe).
- Loss (``--loss``): ``splade`` — :class:`~sbert.losses.SpladeLoss` around
  :class:`~sbert.losses.SparseMultipleNegativesRankingLoss` with FLOPS weights λ_d (3e-5) and λ_q
  (5e-5) warmed up over the first third of the steps, as sentence-transformers' trainer does; or
  ``sparse-mnrl`` — the ranking loss alone (vectors get denser: for comparison only).
- Inference-free models (a Router whose query route is a ``SparseStaticEmbedding``): queries
  take the query route and every other column the document route; a trainable static table learns
  at ``static_learning_rate`` (1e-3, as sentence-transformers' docs set ``learning_rate_mapping``), a
  frozen one not at all. Pass ``query_regularizer_weight=None`` (``--query-regularizer-weight none``)
  to leave the table unregularised, as sentence-transformers' inference-free examples do.
- Dev: NDCG@10 on ``--dev-retrieval`` (default ``stsb-proxy``, no sentence of which is trained on
  by default), with the active dimensions of queries and documents; the best model is kept.

``OUTPUT/results.json`` holds the best dev NDCG@10 and the final model's dev metrics.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path
from typing import Any

from torch import nn

from sbert.base import json_text
from sbert.base.files import write_text_atomic
from sbert.data.beir import load_retrieval_set
from sbert.data.nli import nli_triplets
from sbert.data.paths import MissingDataError
from sbert.data.training_files import read_positive_pairs_or_triplets
from sbert.evaluation.sparse_retrieval import SparseRetrievalEvaluator
from sbert.losses import RegularizerWarmup, SparseMultipleNegativesRankingLoss, SpladeLoss
from sbert.losses.sparse_base import SparseLoss
from sbert.modules.sparse_static_embedding import SparseStaticEmbedding
from sbert.sparse.model import SparseEncoder
from sbert.training.recipe_config import RecipeConfig, nli_pairs, subsample
from sbert.training.trainer import Trainer, TrainingResult, seed_everything

logger = logging.getLogger("sbert")

DEFAULT_SPARSE_DEV = "stsb-proxy"


def train_sparse(config: RecipeConfig, output: Path) -> TrainingResult:
    """Train ``config`` (recipe ``sparse``) into ``output`` and write ``output/results.json``.

    Raises:
        ValueError: No ``base`` (a sparse recipe needs an MLM or SPLADE model to start from), or a
            ``pooling`` (a dense model's setting).
    """
    if config.base is None:
        raise ValueError(
            "the sparse recipe needs --base: a SPLADE model or a *ForMaskedLM folder (the bundled model is dense)"
        )
    if config.pooling is not None:
        raise ValueError(
            f"--pooling {config.pooling} does not apply to the sparse recipe: the model's SpladePooling pools"
        )
    seed_everything(config.seed)
    model = SparseEncoder.from_pretrained(
        config.base, device=config.device, max_active_dims=config.max_active_dims
    )
    examples = subsample(_sparse_examples(config), config.max_pairs, config.seed)
    objective = sparse_objective(config, model)
    objective.gather_across_ranks = config.gather
    training = dataclasses.replace(
        config.training_config("sparse", model),
        learning_rate_mapping=static_learning_rates(objective, config.static_learning_rate),
    )
    evaluator = _sparse_dev(config)
    trainer = Trainer(objective, examples, output, training, evaluator)
    if isinstance(objective, SpladeLoss):
        objective.warmup = RegularizerWarmup(trainer.total_steps, config.regularizer_warmup)
    logger.info(
        "sparse: %d training examples, %s, %d epochs, batch %d, lr %g",
        len(examples),
        config.sparse_loss,
        training.epochs,
        training.batch_size,
        training.learning_rate,
    )
    result = trainer.train(resume=config.resume)
    if not result.interrupted and trainer.is_main:
        _report_sparse(config, output, result, len(examples), evaluator)
    return result


def sparse_objective(config: RecipeConfig, model: Any) -> SparseLoss:
    """The recipe's loss on ``model`` (the SpladeLoss's warm-up is set once the steps are known)."""
    ranking = SparseMultipleNegativesRankingLoss(model)
    if config.sparse_loss == "sparse-mnrl":
        return ranking
    return SpladeLoss(
        model,
        ranking,
        document_regularizer_weight=config.document_regularizer_weight,
        query_regularizer_weight=config.query_regularizer_weight,
    )


def static_learning_rates(objective: nn.Module, rate: float) -> dict[str, float]:
    """``learning_rate_mapping`` that trains every trainable SparseStaticEmbedding table of
    ``objective`` (the query side of an inference-free model) at ``rate``."""
    mapping = {}
    for name, module in objective.named_modules():
        if isinstance(module, SparseStaticEmbedding) and module.weight.requires_grad:
            mapping[f"^{re.escape(name)}\\.weight$"] = rate
    return mapping


def _sparse_examples(config: RecipeConfig) -> list[Any]:
    if config.train_file:
        return list(
            read_positive_pairs_or_triplets(config.train_file, config.file_format, config.skip_bad_lines)
        )
    return list(nli_triplets(nli_pairs(config)))


def _sparse_dev(config: RecipeConfig) -> SparseRetrievalEvaluator | None:
    name = config.dev_retrieval or DEFAULT_SPARSE_DEV
    try:
        dataset = load_retrieval_set(name, config.data_dir, split="dev")
    except (FileNotFoundError, MissingDataError) as error:
        if config.dev_retrieval:
            raise
        logger.warning("no dev set (%s): the final model is kept, not the best", error)
        return None
    return SparseRetrievalEvaluator(dataset, max_active_dims=config.max_active_dims)


def _report_sparse(
    config: RecipeConfig,
    output: Path,
    result: TrainingResult,
    examples: int,
    evaluator: SparseRetrievalEvaluator | None,
) -> None:
    results: dict[str, Any] = {
        "recipe": "sparse",
        "base": config.base,
        "loss": config.sparse_loss,
        "document_regularizer_weight": config.document_regularizer_weight,
        "query_regularizer_weight": config.query_regularizer_weight,
        "seed": config.seed,
        "examples": examples,
        "steps": result.global_step,
        "seconds": round(result.seconds, 1),
        "best_dev_ndcg@10": result.best_score,
        "best_step": result.best_step,
    }
    if evaluator is not None:
        trained = SparseEncoder.from_pretrained(output, device=config.device)
        results["dev"] = {"dataset": evaluator.dataset.name, **evaluator(trained)}
    write_text_atomic(output / "results.json", json_text.dumps(results, indent=2) + "\n")
