"""Fit a distilled token table on the user's sentences: the mean of a sentence's token vectors should
point where the teacher's sentence vector points, centred and projected to the table's dimensions.

The teacher embeds each sentence once (kept in the checkpoint folder). Its vectors are centred on
their own mean over the corpus, then mapped by the distillation's PCA components: centring on the
corpus' mean sentence vector, not on the token vectors' mean, is what makes the fit help. With the
token mean, the targets share one large offset, the cosine loss is spent on it, and STSb dev
Spearman fell from 79.86 to 64.50 in 5 epochs for all-MiniLM-L6-v2 at 256 dimensions; centred as
here it rose to 83.64 (test 76.86; ``benchmarks/static_fit_ablation.py``, README "Static models"). A sentence vector is a mean, so the student can give centred
vectors: a shift of every row shifts every mean by the same amount.

SparseAdam minimises ``1 - cos(mean of token rows, target)`` over shuffled batches, starting from
the distilled table; only the rows of a batch's tokens move (sparse gradients), which makes an
epoch over 135,000 sentences take seconds. After every epoch the table, the optimizer's moments and
the shuffling generator are saved (safetensors and JSON, no pickle), so a killed run resumes where it
stood and ends with the same table as an uninterrupted one.
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

from sbert.base import json_text
from sbert.base.files import replace_dir, staging_dir
from sbert.embeddings.identity import model_identity
from sbert.encoder.model import SentenceEncoder
from sbert.modules import StaticEmbedding
from sbert.static.distill import Projection

# Sentences per saved part of the teacher pass.
TEACHER_PART = 8192


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
    student: SentenceEncoder,
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
    table = static_table(student)
    ids, lengths, _ = table.token_ids(sentences)
    keep = lengths > 0
    sentences = [s for s, k in zip(sentences, keep) if k]
    starts = np.concatenate([[0], np.cumsum(lengths)])[:-1][keep]
    lengths = lengths[keep]
    text_key = _text_key(teacher, projection, sentences)
    key = _run_key(text_key, table, config)
    targets = _teacher_targets(teacher, projection, sentences, text_key, checkpoint_dir, show_progress_bar)

    weight = table.embedding.weight
    optimizer = torch.optim.SparseAdam([weight], lr=config.learning_rate)
    generator = torch.Generator().manual_seed(config.seed)
    first = _resume(checkpoint_dir, key, table, optimizer, generator)
    loss_mean = float("nan")
    student.train()
    table.embedding.sparse = True  # gradients for the rows a batch uses only (SparseAdam's input)
    try:
        for epoch in range(first, config.epochs):
            order = torch.randperm(len(sentences), generator=generator).numpy()
            total, batches = 0.0, range(0, len(order), config.batch_size)
            for start in tqdm(
                batches, desc=f"Fitting epoch {epoch + 1}/{config.epochs}", disable=not show_progress_bar
            ):
                rows = order[start : start + config.batch_size]
                flat = np.concatenate([ids[s : s + n] for s, n in zip(starts[rows], lengths[rows])])
                offsets = np.concatenate([[0], np.cumsum(lengths[rows])[:-1]])
                vectors = table.embedding(torch.from_numpy(flat), torch.from_numpy(offsets))  # (batch, dim)
                loss = 1 - torch.nn.functional.cosine_similarity(vectors, targets[rows]).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(rows)
            loss_mean = total / len(order)
            if checkpoint_dir is not None:
                _save_state(checkpoint_dir, key, epoch + 1, table, optimizer, generator)
    finally:
        table.embedding.sparse = False
    student.eval()
    return {"loss": loss_mean}


def static_table(model: SentenceEncoder) -> StaticEmbedding:
    """The token table of a static model; a ``TypeError`` naming any other model."""
    if not isinstance(model.input_module, StaticEmbedding):
        raise TypeError(f"{model.name} is not a static model: it has no token table to fit")
    return model.input_module


def _text_key(teacher: SentenceEncoder, projection: Projection, sentences: list[str]) -> str:
    """What the cached teacher vectors depend on: the teacher, its projection and the text."""
    digest = hashlib.sha256(model_identity(teacher).fingerprint.encode())
    digest.update(projection.mean.tobytes() + projection.components.tobytes())
    for sentence in sentences:
        digest.update(sentence.encode("utf-8", errors="replace") + b"\n")
    return digest.hexdigest()


def _run_key(text_key: str, table: StaticEmbedding, config: FitConfig) -> str:
    """What a checkpoint must match: the text key, the starting table and the configuration."""
    digest = hashlib.sha256(text_key.encode())
    digest.update(table.embedding.weight.detach().numpy().tobytes())
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
    """The fitting targets (sentences, dim): the teacher's vectors centred on their mean, then projected."""
    vectors = _teacher_vectors(teacher, sentences, key, checkpoint_dir, show_progress_bar)
    centred = vectors.astype(np.float64) - vectors.mean(axis=0, dtype=np.float64)
    return torch.from_numpy((centred @ projection.components.T.astype(np.float64)).astype(np.float32))


def _teacher_vectors(
    teacher: SentenceEncoder,
    sentences: list[str],
    key: str,
    checkpoint_dir: Path | None,
    show_progress_bar: bool,
) -> np.ndarray:
    """The teacher's vectors of ``sentences`` (sentences, teacher_dim), computed in parts of
    :data:`TEACHER_PART` sentences, each kept in ``checkpoint_dir/teacher/``: a run killed during
    this pass (the longest part of a fit) loses at most one part."""
    folder = checkpoint_dir / "teacher" if checkpoint_dir is not None else None
    parts: list[np.ndarray] = []
    with tqdm(total=len(sentences), desc="Teacher on corpus", disable=not show_progress_bar) as bar:
        for index, start in enumerate(range(0, len(sentences), TEACHER_PART)):
            chunk = sentences[start : start + TEACHER_PART]
            file = folder / f"part-{index:05d}.safetensors" if folder is not None else None
            vectors = _read_part(file, key, len(chunk)) if file is not None else None
            if vectors is None:
                vectors = np.asarray(teacher.encode(chunk, batch_size=64), dtype=np.float32)
                if file is not None:
                    file.parent.mkdir(parents=True, exist_ok=True)
                    tmp = file.with_suffix(".tmp")
                    save_file(
                        {
                            "vectors": torch.from_numpy(np.ascontiguousarray(vectors)),
                            "key": torch.frombuffer(bytearray(key.encode()), dtype=torch.uint8),
                        },
                        str(tmp),
                    )
                    tmp.replace(file)  # a part is there whole or not at all
            parts.append(vectors)
            bar.update(len(chunk))
    return np.concatenate(parts)


def _read_part(file: Path, key: str, rows: int) -> np.ndarray | None:
    """A saved part's vectors, or ``None`` if it is missing or from another run."""
    if not file.is_file():
        return None
    stored = load_file(str(file))
    if bytes(stored["key"].numpy()).decode() != key or stored["vectors"].shape[0] != rows:
        return None
    return stored["vectors"].numpy()


def _save_state(
    folder: Path,
    key: str,
    epoch: int,
    table: StaticEmbedding,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
) -> None:
    state = optimizer.state[table.embedding.weight]
    staging = staging_dir(folder / "state")
    try:
        save_file(
            {
                "table": table.embedding.weight.detach().contiguous(),
                "exp_avg": state["exp_avg"],
                "exp_avg_sq": state["exp_avg_sq"],
                "step": torch.as_tensor(state["step"]).reshape(1).float(),
                "generator": generator.get_state(),
            },
            str(staging / "state.safetensors"),
        )
        (staging / "state.json").write_text(
            json_text.dumps({"key": key, "epoch": epoch}) + "\n", encoding="utf-8"
        )
        replace_dir(staging, folder / "state")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _resume(
    folder: Path | None,
    key: str,
    table: StaticEmbedding,
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
    weight = table.embedding.weight
    with torch.no_grad():
        weight.copy_(saved["table"])
    optimizer.state[weight] = {
        "step": int(saved["step"][0]),
        "exp_avg": saved["exp_avg"],
        "exp_avg_sq": saved["exp_avg_sq"],
    }
    generator.set_state(saved["generator"])
    return int(meta["epoch"])
