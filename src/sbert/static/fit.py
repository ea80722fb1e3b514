"""Fit a distilled token table on the user's sentences: the mean of a sentence's token vectors should
point where the teacher's sentence vector points (after the distillation's PCA).

The teacher embeds each sentence once (kept in the checkpoint folder); then Adam minimises
``1 - cos(mean of token rows, projected teacher vector)`` over shuffled batches, starting from the
distilled table. After every epoch the table, Adam's moments and the shuffling generator are saved
(safetensors and JSON, no pickle), so a killed run resumes where it stood and ends with the same
table as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from sbert.encoder import SentenceEncoder
from sbert.files import replace_dir, staging_dir
from sbert.identity import model_identity
from sbert.static.distill import Projection
from sbert.static.encoder import StaticEncoder


@dataclass(frozen=True)
class FitConfig:
    """How the table is fitted; a checkpoint made with another configuration is refused."""

    epochs: int = 5
    batch_size: int = 256
    learning_rate: float = 0.01
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")


def fit_table(
    student: StaticEncoder,
    projection: Projection,
    teacher: SentenceEncoder,
    sentences: list[str],
    config: FitConfig = FitConfig(),
    checkpoint_dir: Path | None = None,
    show_progress_bar: bool = True,
) -> dict[str, float]:
    """Train ``student``'s table in place on ``sentences``; returns the last epoch's mean loss.

    Args:
        student: The distilled model (:func:`~sbert.static.distill.distill_table`).
        projection: The PCA that maps the teacher's vectors to the student's dimensions.
        teacher: The model whose sentence vectors the student learns to match.
        sentences: The training text; sentences with no token are skipped.
        config: Epochs, batch size, learning rate and seed.
        checkpoint_dir: Where the teacher's vectors and the per-epoch state are kept; a run finding
            one there continues from it. ``None``: nothing is kept.
        show_progress_bar: Bars for the teacher pass and each epoch.
    """
    ids, lengths, _ = student._token_ids(sentences)
    keep = lengths > 0
    sentences = [s for s, k in zip(sentences, keep) if k]
    starts = np.concatenate([[0], np.cumsum(lengths)])[:-1][keep]
    lengths = lengths[keep]
    text_key = _text_key(teacher, projection, sentences)
    key = _run_key(text_key, student, config)
    targets = _teacher_targets(teacher, projection, sentences, text_key, checkpoint_dir, show_progress_bar)

    weight = student.embedding.weight
    optimizer = torch.optim.Adam([weight], lr=config.learning_rate)
    generator = torch.Generator().manual_seed(config.seed)
    first = _resume(checkpoint_dir, key, student, optimizer, generator)
    loss_mean = float("nan")
    student.train()
    for epoch in range(first, config.epochs):
        order = torch.randperm(len(sentences), generator=generator).numpy()
        total, batches = 0.0, range(0, len(order), config.batch_size)
        for start in tqdm(
            batches, desc=f"Fitting epoch {epoch + 1}/{config.epochs}", disable=not show_progress_bar
        ):
            rows = order[start : start + config.batch_size]
            flat = np.concatenate([ids[s : s + n] for s, n in zip(starts[rows], lengths[rows])])
            offsets = np.concatenate([[0], np.cumsum(lengths[rows])[:-1]])
            vectors = student.embedding(torch.from_numpy(flat), torch.from_numpy(offsets))  # (batch, dim)
            loss = 1 - torch.nn.functional.cosine_similarity(vectors, targets[rows]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(rows)
        loss_mean = total / len(order)
        if checkpoint_dir is not None:
            _save_state(checkpoint_dir, key, epoch + 1, student, optimizer, generator)
    student.eval()
    return {"loss": loss_mean}


def _text_key(teacher: SentenceEncoder, projection: Projection, sentences: list[str]) -> str:
    """What the cached teacher vectors depend on: the teacher, its projection and the text."""
    digest = hashlib.sha256(model_identity(teacher).fingerprint.encode())
    digest.update(projection.mean.tobytes() + projection.components.tobytes())
    for sentence in sentences:
        digest.update(sentence.encode("utf-8", errors="replace") + b"\n")
    return digest.hexdigest()


def _run_key(text_key: str, student: StaticEncoder, config: FitConfig) -> str:
    """What a checkpoint must match: the text key, the starting table and the configuration."""
    digest = hashlib.sha256(text_key.encode())
    digest.update(student.embedding.weight.detach().numpy().tobytes())
    digest.update(json.dumps(asdict(config), sort_keys=True).encode())
    return digest.hexdigest()


def _teacher_targets(
    teacher: SentenceEncoder,
    projection: Projection,
    sentences: list[str],
    key: str,
    checkpoint_dir: Path | None,
    show_progress_bar: bool,
) -> torch.Tensor:
    """The teacher's sentence vectors, projected (sentences, dim); read back from the checkpoint if there."""
    cached = checkpoint_dir / "teacher.safetensors" if checkpoint_dir is not None else None
    if cached is not None and cached.is_file():
        stored = load_file(str(cached))
        if bytes(stored["key"].numpy()).decode() == key:
            return stored["targets"]
    vectors = teacher.encode(sentences, batch_size=64, show_progress_bar=show_progress_bar)
    targets = torch.from_numpy(projection(np.asarray(vectors)).astype(np.float32))
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp")
        save_file(
            {"targets": targets, "key": torch.frombuffer(bytearray(key.encode()), dtype=torch.uint8)},
            str(tmp),
        )
        tmp.replace(cached)
    return targets


def _save_state(
    folder: Path,
    key: str,
    epoch: int,
    student: StaticEncoder,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
) -> None:
    state = optimizer.state[student.embedding.weight]
    staging = staging_dir(folder / "state")
    try:
        save_file(
            {
                "table": student.embedding.weight.detach().contiguous(),
                "exp_avg": state["exp_avg"],
                "exp_avg_sq": state["exp_avg_sq"],
                "step": torch.as_tensor(state["step"]).reshape(1).float(),
                "generator": generator.get_state(),
            },
            str(staging / "state.safetensors"),
        )
        (staging / "state.json").write_text(json.dumps({"key": key, "epoch": epoch}) + "\n", encoding="utf-8")
        replace_dir(staging, folder / "state")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _resume(
    folder: Path | None,
    key: str,
    student: StaticEncoder,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
) -> int:
    """The epoch to start at: 0, or where a matching checkpoint in ``folder`` stopped (its state restored)."""
    if folder is None or not (folder / "state" / "state.json").is_file():
        return 0
    meta = json.loads((folder / "state" / "state.json").read_text(encoding="utf-8"))
    if meta.get("key") != key:
        raise ValueError(
            f"{folder}: holds a checkpoint of another run (other teacher, text or settings); "
            "remove it or choose another --checkpoint-dir"
        )
    saved = load_file(str(folder / "state" / "state.safetensors"))
    weight = student.embedding.weight
    with torch.no_grad():
        weight.copy_(saved["table"])
    optimizer.state[weight] = {
        "step": torch.tensor(float(saved["step"][0])),
        "exp_avg": saved["exp_avg"],
        "exp_avg_sq": saved["exp_avg_sq"],
    }
    generator.set_state(saved["generator"])
    return int(meta["epoch"])
