"""Dense: a linear layer with an activation on top of the pooled vector, as sentence-transformers uses."""

from __future__ import annotations

from torch import Tensor, nn

# Activations a saved config may name. A fixed table, never an import of an arbitrary class path,
# so that loading a model directory runs no code it names.
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "torch.nn.modules.activation.Tanh": nn.Tanh,
    "torch.nn.modules.linear.Identity": nn.Identity,
    "torch.nn.modules.activation.ReLU": nn.ReLU,
    "torch.nn.modules.activation.GELU": nn.GELU,
    "torch.nn.modules.activation.Sigmoid": nn.Sigmoid,
}


class Dense(nn.Module):
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

    def config(self) -> dict[str, object]:
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
