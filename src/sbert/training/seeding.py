"""One seed for every random number generator a training run touches."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators (CPU and CUDA).

    Examples:
        >>> seed_everything(1); a = torch.rand(1); seed_everything(1)
        >>> bool(torch.equal(a, torch.rand(1)))
        True
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
