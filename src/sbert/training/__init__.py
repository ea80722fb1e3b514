"""Fine-tuning: the trainer, its configuration (the paper's defaults) and resumable checkpoints."""

from sbert.training.autocast import bf16_supported
from sbert.training.config import TrainingConfig
from sbert.training.seeding import seed_everything
from sbert.training.state import TrainerState, TrainingResult
from sbert.training.trainer import Trainer, TrainingDivergedError

__all__ = [
    "Trainer",
    "TrainerState",
    "TrainingConfig",
    "TrainingDivergedError",
    "TrainingResult",
    "bf16_supported",
    "seed_everything",
]
