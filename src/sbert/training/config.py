"""TrainingConfig: the paper's fine-tuning defaults, every one overridable."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TrainingConfig:
    """Hyper-parameters and run settings of :class:`sbert.training.Trainer`.

    The defaults are the paper's: AdamW with learning rate 2e-5, batch size 16, linear warm-up over
    10% of the steps then linear decay to zero, weight decay 0.01 (not on biases and LayerNorm),
    gradient clipping at norm 1.

    Args:
        epochs: Passes over the training data.
        batch_size: Examples per optimiser step.
        learning_rate: Peak learning rate, reached at the end of warm-up.
        warmup_fraction: Share of all steps spent warming up linearly from 0.
        weight_decay: AdamW's decoupled weight decay.
        max_grad_norm: Clip the gradient to this norm; ``None`` turns clipping off.
        seed: Seeds the data order, dropout and every RNG.
        group_by_length: Sort examples by token length inside random chunks, so batches need little
            padding; the batches are then shuffled between chunks.
        chunk_batches: Chunk size, in batches, for ``group_by_length``.
        bf16: Run forward and backward under bf16 autocast (CPUs with AVX512-BF16/AMX, or CUDA);
            ``False`` is exact fp32.
        eval_steps: Evaluate on the dev set every this many steps (and always at each epoch end).
        checkpoint_steps: Write a resumable checkpoint every this many steps (and on Ctrl-C).
        log_steps: Write the mean training loss to the JSONL log every this many steps.
        keep_checkpoint: Keep the last checkpoint once training completes (default: remove it).
        show_progress_bar: A tqdm bar with the running loss and the ETA.
        learning_rate_mapping: Other peak learning rates for the parameters whose name (in the loss
            module) matches a regular expression, as sentence-transformers' argument of that name
            (e.g. a static query side of an inference-free SPLADE at 1e-3).

    Examples:
        >>> TrainingConfig(epochs=4).learning_rate
        2e-05
    """

    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 2e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float | None = 1.0
    seed: int = 42
    group_by_length: bool = True
    chunk_batches: int = 64
    bf16: bool = False
    eval_steps: int | None = 500
    checkpoint_steps: int | None = 500
    log_steps: int = 10
    keep_checkpoint: bool = False
    show_progress_bar: bool = True
    learning_rate_mapping: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        positive = {"epochs": self.epochs, "batch_size": self.batch_size, "chunk_batches": self.chunk_batches}
        positive |= {"log_steps": self.log_steps}
        for name, value in positive.items():
            if value < 1:
                raise ValueError(f"TrainingConfig.{name} must be at least 1, got {value}")
        if not 0.0 <= self.warmup_fraction <= 1.0:
            raise ValueError(f"TrainingConfig.warmup_fraction must be in [0, 1], got {self.warmup_fraction}")
        if self.learning_rate <= 0:
            raise ValueError(f"TrainingConfig.learning_rate must be positive, got {self.learning_rate}")
        for pattern, rate in self.learning_rate_mapping.items():
            if rate <= 0:
                raise ValueError(
                    f"TrainingConfig.learning_rate_mapping[{pattern!r}] must be positive, got {rate}"
                )
        for name in ("eval_steps", "checkpoint_steps"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"TrainingConfig.{name} must be at least 1 or None, got {value}")
