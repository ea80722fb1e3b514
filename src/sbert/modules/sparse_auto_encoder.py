"""SparseAutoEncoder: a dense sentence vector → a wider vector with k non-zero weights (CSR).

"Beyond Matryoshka" (CSR, arXiv 2503.01776) puts a top-k autoencoder after a dense encoder's
pooling: ``relu(topk(W (x - b_pre) + b_lat, k))``. At inference only that encoder half runs; the
decoder (the transposed weights) serves training. sentence-transformers' folder: ``config.json``
(``input_dim``, ``hidden_dim``, ``k``, ``k_aux``, ``normalize``, ``dead_threshold``) and
``model.safetensors`` (``pre_bias``, ``latent_bias``, ``stats_last_nonzero`` and the weights as
``encoder.weight``, or ``decoder.linear.weight`` as sentence-transformers writes the tied copy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.modules.module import Module, write_json


class SparseAutoEncoder(Module):
    """The encoder half of a top-k sparse autoencoder, on pooled (batch, input_dim) vectors.

    Args:
        input_dim: The dense vectors' size.
        hidden_dim: The sparse vectors' size.
        k: Non-zero weights kept per vector (a model's default ``max_active_dims``).
        k_aux: The auxiliary loss's k (a training setting, kept and saved).
        dead_threshold: Steps without activation after which a latent counts as dead (kept and saved).
        normalize: Standardise each input vector first (mean 0, unbiased std 1).

    Examples:
        >>> import torch
        >>> sae = SparseAutoEncoder(4, hidden_dim=8, k=2)
        >>> (sae(torch.randn(3, 4)) != 0).sum(dim=1).le(2).all().item()
        True
    """

    st_type = "sentence_transformers.sparse_encoder.modules.sparse_auto_encoder.SparseAutoEncoder"
    config_keys = ("input_dim", "hidden_dim", "k", "k_aux", "normalize", "dead_threshold")

    def __init__(
        self,
        input_dim: int,
        hidden_dim: int = 512,
        k: int = 8,
        k_aux: int = 512,
        normalize: bool = False,
        dead_threshold: int = 30,
    ) -> None:
        super().__init__()
        for name, value in (("input_dim", input_dim), ("hidden_dim", hidden_dim), ("k", k)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"SparseAutoEncoder: {name} must be a whole number of at least 1, got {value!r}"
                )
        self.input_dim, self.hidden_dim, self.k, self.k_aux = input_dim, hidden_dim, k, k_aux
        self.normalize, self.dead_threshold = normalize, dead_threshold
        self.pre_bias = nn.Parameter(torch.zeros(input_dim))
        self.encoder = nn.Linear(input_dim, hidden_dim, bias=False)
        self.latent_bias = nn.Parameter(torch.zeros(hidden_dim))
        self.register_buffer("stats_last_nonzero", torch.zeros(hidden_dim, dtype=torch.long))

    @property
    def in_features(self) -> int:
        return self.input_dim

    @property
    def out_features(self) -> int:
        return self.hidden_dim

    def forward(self, embeddings: Tensor, k: int | None = None) -> Tensor:
        """Sparse vectors (batch, hidden_dim) of dense ones (batch, input_dim), ``k`` (default
        :attr:`k`) non-zero at most."""
        x = embeddings
        if self.normalize:  # sentence-transformers' LN: unbiased std, eps added to it
            x = x - x.mean(dim=-1, keepdim=True)
            x = x / (x.std(dim=-1, keepdim=True) + 1e-5)
        latents = F.linear(x - self.pre_bias, self.encoder.weight, self.latent_bias)  # (batch, hidden)
        top = torch.topk(latents, k=min(k or self.k, self.hidden_dim), dim=-1)
        return F.relu(torch.zeros_like(latents).scatter_(-1, top.indices, top.values))

    @classmethod
    def load(cls, folder: Path, **options: Any) -> SparseAutoEncoder:
        """Read ``config.json`` and ``model.safetensors``.

        Raises:
            ModelLoadError: naming the file: a setting out of range, or a weight missing or of
                another shape.
        """
        config_file = folder / cls.config_file_name
        config = read_json(config_file)
        try:
            module = cls(**{key: config[key] for key in cls.config_keys if key in config})
        except (TypeError, ValueError) as error:
            raise ModelLoadError(f"{config_file}: {error}") from error
        weights_file = folder / "model.safetensors"
        if not weights_file.is_file():
            raise ModelLoadError(f"{weights_file}: missing; a SparseAutoEncoder keeps its weights there")
        tensors = load_file(str(weights_file))
        if "encoder.weight" not in tensors and "decoder.linear.weight" in tensors:
            tensors["encoder.weight"] = tensors.pop("decoder.linear.weight")  # the tied copy
        tensors.pop("decoder.linear.weight", None)
        try:
            module.load_state_dict(tensors, strict=True)
        except RuntimeError as error:
            raise ModelLoadError(f"{weights_file}: does not match {config_file}: {error}") from error
        return module

    def save(self, folder: Path) -> None:
        """``config.json`` and ``model.safetensors``, the weights named as sentence-transformers writes
        them (its tied copy, ``decoder.linear.weight``)."""
        write_json(folder / self.config_file_name, self.config())
        state = {name: tensor.detach().cpu().contiguous() for name, tensor in self.state_dict().items()}
        state["decoder.linear.weight"] = state.pop("encoder.weight")
        save_file(state, str(folder / "model.safetensors"))

    def extra_repr(self) -> str:
        return f"input_dim={self.input_dim}, hidden_dim={self.hidden_dim}, k={self.k}"
