"""The trainer on a tiny random BERT: it learns, resumes exactly, stops on NaN, saves on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from sbert import SentenceEncoder
from sbert.data import ScoredPair
from sbert.evaluation import SimilarityEvaluator
from sbert.losses import CosineMSELoss
from sbert.training import Trainer, TrainerState, TrainingConfig, TrainingDivergedError

SUBJECTS = ["a man", "a woman", "a child", "the dog", "the cat"]
ACTIONS = ["plays guitar", "plays piano", "eats food", "runs in the park", "cooks food"]


def toy_pairs() -> list[ScoredPair]:
    """Gold: same subject (5) or not (0); the action is shared exactly when the subject is not.

    An untrained model follows word overlap, so it starts out wrong; only training can fix that.
    """
    pairs = []
    for i, subject in enumerate(SUBJECTS):
        for j, action in enumerate(ACTIONS):
            pairs.append(ScoredPair(f"{subject} {action}", f"{subject} {ACTIONS[(j + 1) % 5]}", 5.0))
            pairs.append(ScoredPair(f"{subject} {action}", f"{SUBJECTS[(i + 1) % 5]} {action}", 0.0))
            pairs.append(ScoredPair(f"{subject} {action}", f"{SUBJECTS[(i + 2) % 5]} {action}", 0.0))
    return pairs


def config(**overrides: object) -> TrainingConfig:
    settings: dict[str, object] = {
        "epochs": 2,
        "batch_size": 8,
        "learning_rate": 1e-3,
        "eval_steps": None,
        "checkpoint_steps": 4,
        "show_progress_bar": False,
    }
    return TrainingConfig(**(settings | overrides))  # type: ignore[arg-type]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def test_tiny_bert_learns_loss_falls_and_dev_spearman_rises(
    trainable_model_dir: Path, tmp_path: Path
) -> None:
    pairs = toy_pairs()
    evaluator = SimilarityEvaluator(pairs, name="toy")
    model = SentenceEncoder.from_pretrained(trainable_model_dir, device="cpu")
    before = evaluator(model)["spearman_cosine"]
    result = Trainer(CosineMSELoss(model), pairs, tmp_path, config(epochs=6), evaluator).train()
    records = [json.loads(line) for line in (tmp_path / "training_log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if "loss" in r]
    assert losses[-1] < losses[0] * 0.7
    assert result.best_score is not None and result.best_score > before + 10
    trained = SentenceEncoder.from_pretrained(tmp_path, device="cpu")  # output dir is a model
    assert evaluator(trained)["spearman_cosine"] == pytest.approx(result.best_score, abs=1e-3)
    assert (tmp_path / "training_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "checkpoint").exists()  # removed once training completes


class Kill(Exception):
    pass


def kill_at(step: int):  # type: ignore[no-untyped-def]
    def callback(state: TrainerState) -> None:
        if state.global_step == step:
            raise Kill

    return callback


def test_resume_after_a_kill_ends_with_the_same_weights(trainable_model_dir: Path, tmp_path: Path) -> None:
    pairs = toy_pairs()
    evaluator = SimilarityEvaluator(pairs[:30], name="toy")

    def trainer(output: Path, callbacks=()) -> Trainer:  # type: ignore[no-untyped-def]
        model = SentenceEncoder.from_pretrained(trainable_model_dir, device="cpu")
        settings = config(eval_steps=5, seed=7)
        return Trainer(CosineMSELoss(model), pairs, output, settings, evaluator, callbacks=callbacks)

    whole = trainer(tmp_path / "whole").train()
    with pytest.raises(Kill):  # killed between the checkpoints at steps 8 and 12
        trainer(tmp_path / "killed", [kill_at(10)]).train()
    assert json.loads((tmp_path / "killed" / "checkpoint" / "state.json").read_text())["global_step"] == 8
    resumed = trainer(tmp_path / "killed").train(resume=True)

    assert resumed.global_step == whole.global_step == 20
    assert resumed.best_step == whole.best_step and resumed.best_score == whole.best_score
    a, b = weights(tmp_path / "whole"), weights(tmp_path / "killed")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    log = (tmp_path / "killed" / "training_log.jsonl").read_text().splitlines()
    steps = [json.loads(line)["step"] for line in log if '"loss"' in line]
    assert steps == sorted(set(steps))  # what the killed run logged after step 8 was dropped


def test_nan_loss_stops_with_a_clear_message_and_keeps_the_checkpoint(
    trainable_encoder: SentenceEncoder, tmp_path: Path
) -> None:
    class PoisonedLoss(CosineMSELoss):
        def forward(self, examples):  # type: ignore[no-untyped-def]
            loss = super().forward(examples)
            return loss * float("nan") if self.poisoned else loss

    objective = PoisonedLoss(trainable_encoder)
    objective.poisoned = False

    def poison(state: TrainerState) -> None:
        objective.poisoned = state.global_step >= 5

    trainer = Trainer(objective, toy_pairs(), tmp_path, config(), callbacks=[poison])
    with pytest.raises(TrainingDivergedError, match=r"loss is nan at step 6 .* checkpoint is kept in"):
        trainer.train()
    assert json.loads((tmp_path / "checkpoint" / "state.json").read_text())["global_step"] == 4


def test_ctrl_c_saves_a_checkpoint_and_returns(trainable_encoder: SentenceEncoder, tmp_path: Path) -> None:
    def press_ctrl_c(state: TrainerState) -> None:
        if state.global_step == 3:
            os.kill(os.getpid(), signal.SIGINT)

    handler_before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the suite runs in the background
    result = Trainer(
        CosineMSELoss(trainable_encoder), toy_pairs(), tmp_path, config(), callbacks=[press_ctrl_c]
    ).train()
    assert result.interrupted
    state = json.loads((tmp_path / "checkpoint" / "state.json").read_text())
    assert state["global_step"] == result.global_step >= 3
    assert signal.getsignal(signal.SIGINT) == handler_before  # the caller's handler is restored


def test_empty_training_set_is_an_error(trainable_encoder: SentenceEncoder, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        Trainer(CosineMSELoss(trainable_encoder), [], tmp_path)


def test_resume_without_checkpoint_names_the_folder(
    trainable_encoder: SentenceEncoder, tmp_path: Path
) -> None:
    trainer = Trainer(CosineMSELoss(trainable_encoder), toy_pairs(), tmp_path, config())
    with pytest.raises(FileNotFoundError, match="checkpoint"):
        trainer.train(resume=True)


def test_exploding_weights_stop_the_run_before_any_checkpoint_keeps_them(
    trainable_encoder: SentenceEncoder, tmp_path: Path
) -> None:
    """--lr 1e9: cosine losses stay finite while the weights reach 1e9; no checkpoint may hold them."""
    settings = config(learning_rate=1e9, checkpoint_steps=1, warmup_fraction=0.0)
    trainer = Trainer(CosineMSELoss(trainable_encoder), toy_pairs(), tmp_path, settings)
    with pytest.raises(TrainingDivergedError, match=r"the weights exploded .* at step 1 .* no checkpoint"):
        trainer.train()
    assert not (tmp_path / "checkpoint").exists() and not (tmp_path / "model.safetensors").exists()


def test_the_kept_checkpoint_is_the_last_good_one(trainable_encoder: SentenceEncoder, tmp_path: Path) -> None:
    def blow_up(state: TrainerState) -> None:
        if state.global_step == 5:
            with torch.no_grad():
                trainable_encoder.transformer.model.embeddings.word_embeddings.weight.mul_(1e6)

    trainer = Trainer(CosineMSELoss(trainable_encoder), toy_pairs(), tmp_path, config(), callbacks=[blow_up])
    with pytest.raises(
        TrainingDivergedError, match=r"weights exploded .* at step 8 .* checkpoint is kept in"
    ):
        trainer.train()
    assert json.loads((tmp_path / "checkpoint" / "state.json").read_text())["global_step"] == 4
    kept = load_file(str(tmp_path / "checkpoint" / "objective.safetensors"))
    assert max(float(t.abs().max()) for t in kept.values()) < 100
