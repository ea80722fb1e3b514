"""Dense: a linear layer with an activation on top of the pooled vector, as sentence-transformers uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from sbert.base.errors import ModelLoadError
from sbert.base.files import read_json
from sbert.modules.module import Module, write_json

# Activations a saved config may name. A fixed table, never an import of an arbitrary class path,
# so that loading a model directory runs no code it names.
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "torch.nn.modules.activation.Tanh": nn.Tanh,
    "torch.nn.modules.linear.Identity": nn.Identity,
    "torch.nn.modules.activation.ReLU": nn.ReLU,
    "torch.nn.modules.activation.GELU": nn.GELU,
    "torch.nn.modules.activation.Sigmoid": nn.Sigmoid,
}


class Dense(Module):
    """``activation(W · u + b)`` applied to every sentence vector.

    Args:
        in_features: Input size.
        out_features: Output size.
        bias: Whether the linear layer has a bias.
        activation: Full class path of the activation, one of ``ACTIVATIONS`` (default Tanh).

    Examples:
        >>> import torch
        >>> dense = Dense(384, 128)
        >>> dense(torch.zeros(2, 384)).shape
        torch.Size([2, 128])
    """

    st_type = "sentence_transformers.models.Dense"
    config_keys = ("in_features", "out_features", "bias", "activation_function")

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        activation: str = "torch.nn.modules.activation.Tanh",
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of {', '.join(ACTIVATIONS)}")
        self.in_features, self.out_features, self.bias = in_features, out_features, bias
        self.activation_name = activation
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.activation = ACTIVATIONS[activation]()

    def forward(self, embeddings: Tensor) -> Tensor:
        # embeddings: (batch, in_features) → (batch, out_features)
        return self.activation(self.linear(embeddings))

    def config(self) -> dict[str, Any]:
        """The sentence-transformers ``Dense`` config.json."""
        return {
            "in_features": self.in_features,
            "out_features": self.out_features,
            "bias": self.bias,
            "activation_function": self.activation_name,
        }

    @classmethod
    def from_config(cls, config: dict[str, object]) -> Dense:
        return cls(
            in_features=int(config["in_features"]),  # type: ignore[call-overload]
            out_features=int(config["out_features"]),  # type: ignore[call-overload]
            bias=bool(config.get("bias", True)),
            activation=str(config.get("activation_function", "torch.nn.modules.activation.Tanh")),
        )

    @classmethod
    def load(cls, folder: Path, **options: Any) -> Dense:
        """Read ``config.json`` and the weights (``model.safetensors``; sentence-transformers' older
        ``pytorch_model.bin`` is read with ``weights_only=True``, which refuses pickled code)."""
        dense = cls.from_config(read_json(folder / cls.config_file_name))
        weights = folder / "model.safetensors"
        try:
            if weights.is_file():
                state = load_file(str(weights))
            else:
                weights = folder / "pytorch_model.bin"
                state = torch.load(weights, map_location="cpu", weights_only=True)
            dense.load_state_dict(state)
        except FileNotFoundError as error:
            raise ModelLoadError(f"{folder}: the Dense layer has no model.safetensors") from error
        except Exception as error:
            raise ModelLoadError(f"{weights}: cannot be loaded: {error}") from error
        return dense

    def save(self, folder: Path) -> None:
        write_json(folder / self.config_file_name, self.config())
        state = {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}
        save_file(state, str(folder / "model.safetensors"))
