"""What ``encode()`` hands back, as sentence-transformers hands it back.

After the network has made float32 sentence vectors (n, dim), one step turns them into the output
that sentence-transformers' ``encode`` documents: cut to ``truncate_dim`` → normalize → quantize to
the output ``precision`` → numpy array, one tensor, or a list of tensors. ``output_value=
"token_embeddings"`` instead returns each sentence's token vectors.

``precision`` here is the precision of the *output* (sentence-transformers' meaning); the precision
the network computes in is ``compute_precision`` (:data:`sbert.base.options.PRECISIONS`).

Example:
    >>> import torch
    >>> output = EncodeOutput(precision="ubinary", normalize=True)
    >>> output.finish(torch.tensor([[1.0, -2.0, 3.0]]), single=False)
    array([[160]], dtype=uint8)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import torch
from torch import Tensor, nn

from sbert.base.batching import length_sorted_batches
from sbert.base.empty import empty_answer
from sbert.base.inputs import check_count
from sbert.base.options import PRECISIONS
from sbert.inference.runner import RunOptions
from sbert.model.encoding import EncodeRequest, planned_vectors

OutputPrecision = Literal["float32", "int8", "uint8", "binary", "ubinary"]
OutputValue = Literal["sentence_embedding", "token_embeddings"]
OUTPUT_PRECISIONS: tuple[OutputPrecision, ...] = get_args(OutputPrecision)
OUTPUT_VALUES: tuple[OutputValue, ...] = get_args(OutputValue)


def check_output_precision(precision: str | None) -> OutputPrecision:
    """``precision`` as an output precision (``None``: float32, as sentence-transformers takes it);
    a compute precision gets an error saying which is which.

    Examples:
        >>> check_output_precision("int8")
        'int8'
        >>> check_output_precision("bfloat16")
        Traceback (most recent call last):
        ...
        ValueError: precision= is the output precision (float32, int8, uint8, binary, ubinary) as in sentence-transformers; for the compute precision use compute_precision='bfloat16'
    """
    if precision is None:
        return "float32"
    for option in OUTPUT_PRECISIONS:
        if precision == option:
            return option
    if isinstance(precision, str) and precision.lower() in PRECISIONS:
        raise ValueError(
            f"precision= is the output precision ({', '.join(OUTPUT_PRECISIONS)}) as in "
            f"sentence-transformers; for the compute precision use compute_precision={precision!r}"
        )
    raise ValueError(
        f"unknown precision {precision!r}; the output precision is one of {', '.join(OUTPUT_PRECISIONS)} "
        f"(the compute precision, compute_precision=, one of {', '.join(PRECISIONS)})"
    )


@dataclass(frozen=True)
class EncodeOutput:
    """How ``encode()`` shapes its float32 sentence vectors (sentence-transformers' keywords).

    Attributes:
        output_value: ``"sentence_embedding"`` or ``"token_embeddings"`` (one (tokens, hidden)
            tensor per sentence, padding dropped; the conversions below do not apply).
        precision: The output precision: ``float32``, ``int8``, ``uint8`` (one byte a dimension,
            ranges from this call's vectors, as sentence-transformers does), ``binary`` or
            ``ubinary`` (bits packed eight to a byte).
        normalize: Scale every vector to unit length (after ``truncate_dim``).
        truncate_dim: Keep the first this many dimensions (``None``: all).
        convert_to_numpy: A numpy array; ``False`` (and no tensor): a list of 1-d tensors.
        convert_to_tensor: One tensor (wins over ``convert_to_numpy``).
    """

    output_value: str = "sentence_embedding"
    precision: str | None = "float32"
    normalize: bool = False
    truncate_dim: int | None = None
    convert_to_numpy: bool = True
    convert_to_tensor: bool = False

    def __post_init__(self) -> None:
        check_output_precision(self.precision)
        if self.output_value not in OUTPUT_VALUES:
            hint = " (sbert does not return every feature)" if self.output_value is None else ""
            raise ValueError(
                f"unknown output_value {self.output_value!r}{hint}; choose one of {', '.join(OUTPUT_VALUES)}"
            )
        if self.truncate_dim is not None:
            check_count("truncate_dim", self.truncate_dim)

    @classmethod
    def of(
        cls,
        model: Any,
        output_value: str,
        precision: str | None,
        normalize: bool,
        truncate_dim: int | None,
        convert_to_numpy: bool,
        convert_to_tensor: bool,
    ) -> EncodeOutput:
        """The output ``encode()`` was asked for, checked; ``truncate_dim`` ``None``: the model's."""
        truncate_dim = model.truncate_dim if truncate_dim is None else truncate_dim
        return cls(output_value, precision, normalize, truncate_dim, convert_to_numpy, convert_to_tensor)

    @property
    def tokens(self) -> bool:
        return self.output_value == "token_embeddings"

    def finish(self, embeddings: Tensor, single: bool) -> np.ndarray | Tensor | list[Tensor]:
        """The output of float32 sentence vectors (n, dim) on the CPU; ``single``: of one sentence."""
        if not single and len(embeddings) == 0:  # sentence-transformers' (0,), not (0, dim)
            return empty_answer(self.convert_to_tensor, self.convert_to_numpy)
        if self.truncate_dim is not None:
            embeddings = embeddings[:, : self.truncate_dim]  # (n, truncate_dim), as ST: no rescaling
        if self.normalize:
            embeddings = torch.nn.functional.normalize(embeddings, p=2, dim=1)
        result: np.ndarray | Tensor = embeddings
        precision = check_output_precision(self.precision)
        if len(embeddings) and precision != "float32":
            from sbert.embeddings.quantization import quantize_embeddings

            result = quantize_embeddings(embeddings.numpy(), precision)
        if self.convert_to_tensor:
            result = torch.as_tensor(result)
        elif self.convert_to_numpy:
            result = result.numpy() if isinstance(result, Tensor) else result
        else:
            rows = list(torch.as_tensor(result))
            return rows[0] if single else rows
        return result[0] if single else result


def encoded(
    model: Any,
    request: EncodeRequest,
    output: EncodeOutput,
    compute_precision: str | None,
    options: RunOptions,
) -> Any:
    """:meth:`~sbert.SentenceEncoder.encode`'s answer to a checked call: the sentence vectors by the
    plan ``compute_precision`` asks for (:func:`~sbert.model.encoding.planned_vectors`) in the
    output's form, or each sentence's token vectors.

    Raises:
        ValueError: ``compute_precision`` that the model cannot run, token vectors of a static model.
    """
    plan = model.planning.encode_plan(compute_precision)
    if output.tokens:
        if model.is_static:
            raise ValueError("a static model has no token embeddings: use output_value='sentence_embedding'")
        vectors = token_embeddings(model, request.texts, request.batch_size)
        return vectors[0] if request.single else vectors
    return output.finish(planned_vectors(model, plan, request, options), request.single)


def token_embeddings(model: nn.Module, texts: Sequence[str], batch_size: int) -> list[Tensor]:
    """Each text's token vectors (tokens, hidden), float32 on the CPU, in input order.

    What the transformer gives before pooling (the prompt's tokens included, as in
    sentence-transformers), computed in float32 on PyTorch whatever the compute precision.
    """
    tokenized = model.token_ids(texts)  # type: ignore[operator]
    out: list[Tensor] = [torch.empty(0)] * len(texts)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for batch in length_sorted_batches(tokenized.lengths, batch_size):
                features = model.collate([tokenized.ids[i] for i in batch])  # type: ignore[operator]
                tokens = model.transformer(features).float().cpu()  # type: ignore[operator]  # (batch, seq, hidden)
                for row, index in enumerate(batch.tolist()):
                    out[index] = tokens[row, : len(tokenized.ids[index])]
    finally:
        model.train(was_training)
    return out
