"""Trainer: fine-tunes any loss module that owns a model, with the paper's schedule and safe resumes.

The protocol (what :class:`Trainer` needs from the objects it is given):

- ``objective``: an ``nn.Module`` that owns the model being trained as ``objective.model`` and maps a
  list of training examples to a scalar loss, ``objective(examples) -> Tensor`` (it does its own
  tokenization and collation, so the examples can be any records: pairs, triplets, ...). Its whole
  state (model plus heads such as SoftmaxLoss's classifier) is checkpointed. Optionally
  ``objective.lengths(examples) -> list[int]`` gives each example's token length for grouping
  batches by length; without it, batches are plain shuffles.
- ``objective.model.save(path)``: writes the model as a directory; the trainer saves the best model
  (or, without an evaluator, the final one) with it into ``output_dir``.
- ``evaluator``: optional ``callable(model) -> dict[str, float]``, higher is better; the key it keeps
  the best model by is ``evaluator.primary_metric`` (or ``TrainingConfig``-independent ``metric=``).

Any loss of :mod:`sbert.losses` fits; so does a cross-encoder wrapped in a loss module.

Under ``torchrun`` (see :mod:`sbert.base.distributed`) the same trainer runs on every rank: each
takes its share of every global batch, ``DistributedDataParallel`` averages the gradients, and rank 0
alone evaluates, logs, writes checkpoints and saves the model.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from tqdm.auto import tqdm

from sbert.base.contracts import Evaluator
from sbert.base.distributed import (
    Distributed,
    DistributedError,
    check_batching,
    distributed_model,
    loss_weights,
    lost_peers,
    rank_share,
    step_seed,
)
from sbert.training.autocast import TrainingPrecision, training_precision
from sbert.training.batches import batches_per_epoch, epoch_batches, example_lengths
from sbert.training.checkpoint import check_same_run, load_checkpoint, save_checkpoint
from sbert.training.config import TrainingConfig
from sbert.training.dev_evaluation import evaluate_during_training
from sbert.training.embedder import EmbedderPlan, run_plan, set_embedder
from sbert.training.health import (
    TrainingDivergedError,
    divergence_message,
    lost_peer_error,
    weight_norm,
    weights_problem,
)
from sbert.training.log import TrainingLog, plot_training_curve
from sbert.training.output_dir import (
    CHECKPOINT_DIR,
    LOG_FILE,
    PLOT_FILE,
    claim_training_output,
    save_model_into,
)
from sbert.training.prefetch import Prefetcher, install_embedder
from sbert.training.schedule import build_optimizer, build_scheduler
from sbert.training.seeding import seed_everything
from sbert.training.state import TrainerState, TrainingResult, kept_state, restored_state
from sbert.training.steps import StepRunner, first_bad, sync_point
from sbert.training.stop_signals import StopSignals

logger = logging.getLogger("sbert")


class Trainer:
    """Train ``objective`` on ``train_examples``; the best model goes to ``output_dir``.

    ``output_dir`` ends as a normal model directory (``objective.model.save``) holding, beside the
    model files, ``training_log.jsonl``, ``training_curve.png`` and, while a run is unfinished,
    ``checkpoint/``. ``train(resume=True)`` continues from ``checkpoint/`` and ends with the same
    weights as a run that was never stopped (fp32; same data, config and seed). A run stops with
    :class:`TrainingDivergedError` as soon as the loss or the weights leave the safe range
    (:mod:`sbert.training.health`); what it wrote before is kept.

    In a process group of two or more (``torchrun``), ``config.batch_size`` is the global batch, which
    must be a multiple of the number of processes; every rank must see the same examples, and on
    several machines ``output_dir`` must be a folder they share (to resume, and for the next stage).

    Args:
        objective: The loss module (see the module docstring for the protocol).
        train_examples: The training records, any type ``objective`` accepts.
        output_dir: Where the model, the log, the plot and the checkpoints go.
        config: Hyper-parameters (default: the paper's).
        evaluator: ``callable(model) -> dict``; the best model by its primary metric is kept.
        metric: The key of the evaluator's dict to select by (default ``evaluator.primary_metric``).
        callbacks: Called with the :class:`TrainerState` after every step.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.data import read_stsb
        >>> from sbert.evaluation import SimilarityEvaluator
        >>> from sbert.losses import CosineMSELoss
        >>> model = SentenceEncoder.from_pretrained()
        >>> trainer = Trainer(CosineMSELoss(model), read_stsb("train")[:64], "out/stsb",
        ...                   TrainingConfig(epochs=1), SimilarityEvaluator(read_stsb("dev")[:100]))
        >>> result = trainer.train()
        >>> result.global_step
        4
    """

    def __init__(
        self,
        objective: nn.Module,
        train_examples: Sequence[Any],
        output_dir: str | Path,
        config: TrainingConfig | None = None,
        evaluator: Evaluator[Any] | None = None,  # Any: the trainer trains bi- and cross-encoders
        metric: str | None = None,
        callbacks: Sequence[Callable[[TrainerState], None]] = (),
    ) -> None:
        if not train_examples:
            raise ValueError("no training examples: the training data set is empty")
        if not hasattr(objective, "model") or not hasattr(objective.model, "save"):
            raise TypeError("objective must own the trained model as objective.model, with a save(path)")
        self.objective = objective
        self.examples = list(train_examples)
        self.output_dir = Path(output_dir)
        self.config = config or TrainingConfig()
        self.evaluator = evaluator
        self.metric = metric or getattr(evaluator, "primary_metric", None)
        if evaluator is not None and self.metric is None:
            raise ValueError("the evaluator has no primary_metric; pass metric= to choose the key")
        self.callbacks = list(callbacks)
        self.log = TrainingLog(self.output_dir / LOG_FILE)
        self.state = TrainerState()
        self.run = Distributed.current()
        self.world_size = self.run.world_size if self.run else 1
        if self.run:
            check_batching(len(self.examples), self.config.batch_size, self.world_size)
        # A last batch smaller than the number of processes cannot be shared: it is left out.
        self.steps_per_epoch = batches_per_epoch(len(self.examples), self.config.batch_size, self.world_size)
        self.total_steps = self.steps_per_epoch * self.config.epochs
        self.is_main = self.run is None or self.run.is_main
        self._stop = StopSignals(self._peer_error if self.run else None)
        self._start_norm = math.nan
        self._prefetcher = Prefetcher(None, objective)  # train() installs the run's
        self._agreed_stop = False  # under torchrun: a stop every rank agreed on at a sync point
        # What the run computes with, chosen on the model's device (tests may replace it before train()).
        self.precision: TrainingPrecision = training_precision(self.run_device, self.config.bf16)
        self.embedder_plan: EmbedderPlan | None = run_plan(objective, self.precision)

    @property
    def checkpoint_dir(self) -> Path:
        return self.output_dir / CHECKPOINT_DIR

    def train(self, resume: bool = False) -> TrainingResult:
        """Run (or, with ``resume``, continue) training; Ctrl-C saves a checkpoint and returns.

        Raises:
            TrainingDivergedError: the loss became NaN or infinite, or the weights exploded (the last
                checkpoint, a good one, is kept).
            FileNotFoundError: ``resume`` without a checkpoint in ``output_dir``.
            OutputRefusedError: ``output_dir`` holds files but no training run (see :mod:`sbert.base.outputs`).
        """
        with claim_training_output(self.output_dir):
            return self._train(resume)

    def _train(self, resume: bool) -> TrainingResult:
        config = self.config
        started = time.perf_counter()
        seed_everything(config.seed)
        lengths = example_lengths(self.objective, self.examples) if config.group_by_length else None
        optimizer = build_optimizer(
            self.objective, config.learning_rate, config.weight_decay, config.learning_rate_mapping
        )
        scheduler = build_scheduler(optimizer, self.total_steps, config.warmup_fraction)
        self._start_norm = weight_norm(self.objective)
        if resume:
            self._resume(optimizer, scheduler)
        elif self.is_main:
            self.log.truncate(0)
            self.log.write({"event": "start", "config": asdict(config), "examples": len(self.examples)})
        forward = self._distribute()
        runner = StepRunner(self.objective, optimizer, scheduler, self.precision, config.max_grad_norm)
        runner.mark(self.state.global_step + 1)
        prefetcher = self._prefetcher = self._plan()
        self.objective.train()
        bar = tqdm(
            total=self.total_steps,
            initial=self.state.global_step,
            desc="Training",
            unit="step",
            disable=not (config.show_progress_bar and self.is_main),
        )
        running: list[float] = []
        self._stop.install()
        try:
            for epoch in range(self.state.epoch, config.epochs):
                batches = epoch_batches(
                    lengths, len(self.examples), config.batch_size, config.seed, epoch, config.chunk_batches
                )
                batches = [batch for batch in batches if len(batch) >= self.world_size]
                first = self.state.step_in_epoch if epoch == self.state.epoch else 0
                for index in range(first, len(batches)):
                    prefetcher.before_step(batches, index, first, self._share)
                    self._step(batches[index], forward, runner)
                    self.state.epoch, self.state.step_in_epoch = epoch, index + 1
                    self.state.learning_rate = float(scheduler.get_last_lr()[0])
                    bar.update(1)
                    self._after_step(runner, running, bar, index + 1 == len(batches))
                    for callback in self.callbacks:
                        callback(self.state)
                    if self._stopping():
                        if self.is_main:
                            self._save_checkpoint(optimizer, scheduler)
                            logger.info("interrupted: checkpoint saved at step %d", self.state.global_step)
                        return self._result(started, interrupted=True)
                self.state.epoch, self.state.step_in_epoch = epoch + 1, 0
                if self.evaluator is not None and not self._evaluated_at(self.state.global_step):
                    self._evaluate()
        except RuntimeError as error:  # a peer died or hung: name this rank, the step and what is kept
            if self.run is None or not lost_peers(error):
                raise
            raise self._peer_error(str(error).strip().splitlines()[0]) from error
        finally:
            bar.close()
            self._stop.restore()
            self.objective.eval()
            prefetcher.close()
            set_embedder(self.objective, None)
        self._finish()
        return self._result(started, interrupted=False)

    def _distribute(self) -> nn.Module:
        if self.run is None:
            return self.objective
        settings = asdict(self.config) | {"world_size": self.world_size, "resumed_at": self.state.global_step}
        return distributed_model(self.run, self.objective, self.examples, settings)

    @property
    def run_device(self) -> torch.device:
        return next(self.objective.parameters()).device

    def _plan(self) -> Prefetcher:
        """Give the loss the run's embedder; say the precision and the forward pass chosen, and why."""
        forward, prefetcher = install_embedder(self.objective, self.embedder_plan)
        unmet = self.config.bf16 and self.precision.dtype is None  # bf16 asked for, fp32 it is: say it louder
        logger.log(
            logging.WARNING if unmet else logging.INFO, "%s; forward: %s", self.precision.describe(), forward
        )
        if self.is_main:
            self.log.write({"event": "plan", "precision": self.precision.describe(), "forward": forward})
        return prefetcher

    def _share(self, batch: np.ndarray) -> list[Any]:
        """This rank's examples of a global batch."""
        if self.run is not None:
            batch = rank_share(batch, self.run.rank, self.run.world_size)
        return [self.examples[i] for i in batch]

    def _step(self, batch: np.ndarray, forward: nn.Module, runner: StepRunner) -> None:
        """Queue one step on the device (see :mod:`sbert.training.steps`: nothing is read back)."""
        run, weight, scale = self.run, 1.0, 1.0
        if run is not None:
            torch.manual_seed(step_seed(self.config.seed, run.rank, self.state.global_step))
            replicated = bool(getattr(self.objective, "replicated_loss", False))
            share = len(rank_share(batch, run.rank, run.world_size))
            weight, scale = loss_weights(share, len(batch), run.world_size, replicated)
        examples = self._share(batch)
        runner.step(lambda: forward(examples), weight, scale)
        self.state.global_step += 1

    def _stopping(self) -> bool:
        return self._agreed_stop if self.run is not None else self._stop.requested

    def _read_losses(self, runner: StepRunner, running: list[float], bar: Any) -> None:
        """The losses since the last sync point, on the host; a loss that was not finite stops the run."""
        first, values, stop = runner.read(self._stop.requested, self.run is not None, self.run_device)
        self._agreed_stop = stop
        bad = first_bad(values, first)
        if bad is not None:
            raise self._diverged(f"the loss is {bad[1]}", bad[0])
        if values:
            running.extend(values)
            self.state.loss = values[-1]
            bar.set_postfix(loss=f"{values[-1]:.4f}", lr=f"{self.state.learning_rate:.2e}")

    def _after_step(self, runner: StepRunner, running: list[float], bar: Any, epoch_end: bool) -> None:
        config, step = self.config, self.state.global_step
        stop = self.run is None and self._stop.requested  # under torchrun: agreed at the next sync point
        if stop or sync_point(config, step, self.total_steps, epoch_end) or not runner.skips_on_device:
            self._read_losses(runner, running, bar)
        if step % config.log_steps == 0:  # on every rank, so that all stop together
            self._check_weights()
        if not self.is_main:
            return
        if (step % config.log_steps == 0 or step == self.total_steps) and running:
            record = {"step": step, "epoch": self.state.epoch, "loss": float(np.mean(running))}
            self.log.write(record | {"lr": self.state.learning_rate})
            running.clear()
        if self.evaluator is not None and config.eval_steps and step % config.eval_steps == 0:
            self._evaluate()
        if config.checkpoint_steps and step % config.checkpoint_steps == 0 and step < self.total_steps:
            self._save_checkpoint(runner.optimizer, runner.scheduler)

    def _evaluate(self) -> None:
        assert self.evaluator is not None and self.metric is not None
        if not self.is_main:
            return
        self._prefetcher.wait()  # the evaluator tokenizes on this thread
        scores, score = evaluate_during_training(
            self.evaluator, self.objective.model, self.metric, self.config.show_progress_bar
        )
        step = self.state.global_step
        self.state.dev_scores.append({"step": step, self.metric: score})
        improved = self.state.best_score is None or score > self.state.best_score
        if improved:
            self.state.best_score, self.state.best_step = score, step
            self._save_model()
        self.log.write({"step": step, "epoch": self.state.epoch, "dev": scores, "best": improved})
        logger.info("step %d: dev %s = %.2f%s", step, self.metric, score, " (best)" if improved else "")
        self.objective.train()

    def _evaluated_at(self, step: int) -> bool:
        return bool(self.state.dev_scores) and self.state.dev_scores[-1]["step"] == step

    def _save_model(self) -> None:
        self._check_weights()
        save_model_into(self.objective.model, self.output_dir)

    def _save_checkpoint(self, optimizer: Any, scheduler: Any) -> None:
        self._check_weights()
        state = kept_state(self.state) | {
            "log_size": self.log.size(),
            "examples": len(self.examples),
            "total_steps": self.total_steps,
            "start_weight_norm": self._start_norm,
            "config": asdict(self.config),
        }
        save_checkpoint(self.checkpoint_dir, self.objective, optimizer, scheduler, state)

    def _resume(self, optimizer: Any, scheduler: Any) -> None:
        state = load_checkpoint(self.checkpoint_dir, self.objective, optimizer, scheduler)
        check_same_run(state, self.checkpoint_dir, len(self.examples), self.total_steps)
        self.state = restored_state(state)
        self._start_norm = state.get("start_weight_norm", self._start_norm)
        if self.is_main:
            self.log.truncate(state["log_size"])
            self.log.write({"event": "resume", "step": self.state.global_step})
            logger.info("resuming at step %d of %d", self.state.global_step, self.total_steps)

    def _finish(self) -> None:
        if not self.is_main:
            dist.barrier()  # return once rank 0 has saved the model, which a next stage may load
            return
        if self.evaluator is None:
            self._save_model()
        plot_training_curve(self.log.records(), self.output_dir / PLOT_FILE, self.metric or "")
        if not self.config.keep_checkpoint:
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
        self.log.write({"event": "end", "step": self.state.global_step, "best_score": self.state.best_score})
        if self.run is not None:
            dist.barrier()

    def _check_weights(self) -> None:
        """Stop before anything is written from weights that break the rule of :mod:`~sbert.training.health`.

        Every ``log_steps`` steps and before every save: a norm over all weights costs about a tenth of
        a step, too much for every step.
        """
        problem = weights_problem(weight_norm(self.objective), self._start_norm)
        if problem is not None:
            raise self._diverged(problem, self.state.global_step)

    def _diverged(self, problem: str, step: int) -> TrainingDivergedError:
        return TrainingDivergedError(divergence_message(problem, step, self.state.epoch, self.checkpoint_dir))

    def _peer_error(self, cause: str) -> DistributedError:
        label = self.run.label if self.run else "rank 0 of 1"
        return lost_peer_error(label, self.state.global_step + 1, cause, self.checkpoint_dir)

    def _result(self, started: float, interrupted: bool) -> TrainingResult:
        return TrainingResult(
            output_dir=self.output_dir,
            global_step=self.state.global_step,
            total_steps=self.total_steps,
            best_score=self.state.best_score,
            best_step=self.state.best_step,
            interrupted=interrupted,
            seconds=time.perf_counter() - started,
        )
