"""ModelBase: what every kind of model is (dense, sparse, cross-encoder), below the three of them.

sentence-transformers 6.2 puts its three kinds on one ``BaseModel`` (device, ``max_seq_length``,
tokenizer, save); :class:`ModelBase` is sbert's: where the weights are, the length limit and its one
check, the tokenizer, ``save``/``save_pretrained``, a model placed on its device after loading, and
``encode(device=..., pool=...)``'s one check (:func:`check_devices`). :class:`PlannedAttributes`
adds the compute side a model runs on :class:`~sbert.inference.planning.Planning` with (its plan,
precision and backend, under the model's flat names). Each kind keeps its own head and output forms.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self, cast

import torch
from torch import Tensor, nn

from sbert.base.inputs import check_max_seq_length
from sbert.base.outputs import MODEL, claiming
from sbert.inference.cpu import CpuCapabilities
from sbert.inference.plan import EnginePlan
from sbert.inference.planning import Planned
from sbert.inference.precision import ComputeBackend, ComputePrecision
from sbert.inference.runners import Runners


def check_devices(device: Any, pool: Any) -> str | None:
    """The one device ``encode(device=...)`` runs on; sbert encodes in one process, never a pool.

    Examples:
        >>> check_devices(["cpu", "cpu"], None)
        'cpu'
        >>> check_devices(None, object())
        Traceback (most recent call last):
        ...
        ValueError: encode(pool=...): sbert encodes in one process and has no multi-process pool; drop pool= (for a large corpus, `sbert encode FILE -o DIR/ --engine ray` spreads the work over a Ray cluster)
    """
    if pool is not None:
        raise ValueError(
            "encode(pool=...): sbert encodes in one process and has no multi-process pool; drop pool= "
            "(for a large corpus, `sbert encode FILE -o DIR/ --engine ray` spreads the work over a Ray cluster)"
        )
    if isinstance(device, list | tuple):
        if len(set(map(str, device))) > 1:
            raise ValueError(
                f"encode(device={list(device)!r}): sbert encodes in one process, on one device; name one"
            )
        return str(device[0]) if device else None
    return None if device is None else str(device)


def default_device(device: str | torch.device | None) -> str | torch.device:
    """``device``, else CUDA where there is a GPU, else the CPU (what every kind loads onto)."""
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


class ModelBase(nn.Module):
    """The part of every model kind that is not its head (subclassed, never built alone).

    Examples:
        >>> from sbert import CrossEncoder, SentenceEncoder, SparseEncoder
        >>> all(issubclass(kind, ModelBase) for kind in (SentenceEncoder, SparseEncoder, CrossEncoder))
        True
        >>> model = SentenceEncoder.from_pretrained(device="cpu")
        >>> model.device.type, model.max_seq_length
        ('cpu', 256)
    """

    name: str
    source: str | None = None  # the resolved folder the model was loaded from (None: built in memory)
    least_seq_length = 1  # the shortest max_seq_length an input fits in (a pair needs 3)
    input_module: Any

    @property
    def device(self) -> torch.device:
        """Where the weights are, so where ``encode()`` runs."""
        return next(self.parameters()).device

    @property
    def max_seq_length(self) -> int:
        """Inputs are cut to this many tokens, special tokens included; settable (a whole number, at
        least :attr:`least_seq_length`, else :class:`~sbert.base.errors.MaxSeqLengthError`)."""
        return int(self.input_module.max_seq_length)

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        check_max_seq_length(value, None, self.name, least=self.least_seq_length, required=True)
        self._set_max_seq_length(int(value))

    def _set_max_seq_length(self, value: int) -> None:
        """Every stack the model runs cuts at ``value`` (a Router model: every route)."""
        for stack in self.stacks():
            stack.input_module.max_seq_length = value

    def stacks(self) -> list[Self]:
        """The module stacks this model runs: itself (a Router model: one per route)."""
        return [self]

    @property
    def tokenizer(self) -> Any:
        """The tokenizer (sentence-transformers' ``model.tokenizer``): Hugging Face's for a
        transformer, a Rust ``tokenizers.Tokenizer`` for a static model."""
        return self.input_module.tokenizer

    def collate(self, token_ids: Sequence[Sequence[int]]) -> dict[str, Tensor]:
        """``forward``'s input for tokenized texts, on the model's device (what losses call)."""
        features = self.input_module.collate(token_ids)  # (batch, longest) each; static: flat
        return {key: value.to(self.device) for key, value in features.items()}

    @claiming("path", MODEL)  # a file, a link, or a folder with files sbert did not write: refused first
    def save(self, path: str | Path) -> None:
        """Save as a folder that sbert and sentence-transformers both load (safetensors only),
        replaced atomically: a new path, an empty folder or one sbert saved before, else
        :class:`~sbert.base.outputs.OutputRefusedError` (:mod:`sbert.base.outputs`)."""
        self._write(Path(path))

    def _write(self, path: Path) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not say how it is saved")

    def save_pretrained(self, path: str | Path, *args: Any, **kwargs: Any) -> None:
        """:meth:`save` (sentence-transformers' other name); model cards are not written."""
        self.save(path)

    def placed(self, device: str | torch.device | None) -> Self:
        """The model in eval mode on ``device`` (default: CUDA when available, else the CPU), as
        every kind is after loading."""
        self.eval()
        return self.to(default_device(device))

    def move_for_encode(self, device: Any, pool: Any) -> None:
        """``encode(device=..., pool=...)``: checked (:func:`check_devices`), then moved there."""
        if (target := check_devices(device, pool)) is not None:
            self.to(target)


class PlannedAttributes:
    """A model that computes on a :class:`~sbert.inference.planning.Planning` (``self.planning``):
    its attributes under the model's flat names (a mixin)."""

    planning: Any
    name = Planned[str]()
    """What the model was loaded from, for display and messages."""
    requested_precision = Planned[ComputePrecision]()
    """The precision asked for (``auto``, ``float32``, ...; settable); :attr:`precision` is what runs."""
    requested_backend = Planned[ComputeBackend]()
    """The backend asked for (``auto``, ``torch``, ``openvino``; settable); :attr:`backend` is what runs."""
    cpu_capabilities = Planned[CpuCapabilities]()
    """The CPU the plans are made for (settable: tests simulate others)."""
    calibration_sentences = Planned[Sequence[str] | None]()
    """mixed and int8: the sentences that fix the activation ranges (``None``: the bundled set)."""
    runners = Planned[Runners]()
    """The runners of the modules and what they keep (bf16 weights, compiled graphs)."""
    plan = Planned[EnginePlan]()
    """What the model runs (:attr:`Planning.plan <sbert.inference.planning.Planning.plan>`)."""
    precision = Planned[str]()
    """The compute precision it runs at (:attr:`Planning.precision <sbert.inference.planning.Planning.precision>`)."""
    backend = Planned[str]()
    """The engine it runs on: ``"torch"`` or ``"openvino"``."""
    packs = Planned[bool]()
    """Whether ``pack=True`` packs rows here."""

    def set_precision(self, precision: str | None = None, backend: str | None = None) -> EnginePlan:
        """Ask for another compute precision or backend; returns the plan that now runs (a Router
        model: every route that runs a transformer follows; a static token table stays float32)."""
        for stack in cast(Any, self).stacks()[1:]:  # ModelBase.stacks: the model's own comes first
            if not stack.is_static:
                stack.planning.set_precision(precision, backend)
        return self.planning.set_precision(precision, backend)  # type: ignore[no-any-return]

    def plan_for(self, precision: str, backend: str | None = None) -> EnginePlan:
        """What the model runs when asked for ``precision`` on ``backend`` (default: the requested one)."""
        return self.planning.plan_for(precision, backend)  # type: ignore[no-any-return]
