"""Inference runs in eval mode, whatever mode the caller left the model in.

A model after ``model.train()`` (or in the middle of a training run, between steps) has dropout
on: vectors and scores would change from call to call. sentence-transformers' ``encode`` and
``predict`` switch to eval mode first; so does every sbert entry point that runs a model
(``encode``, ``predict``, ``rank`` and what calls them), through :func:`evaluating`, and each module
is set back to the mode it was in (a training loop continues with dropout, a frozen part stays
frozen).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from torch import nn

Method = TypeVar("Method", bound=Callable[..., Any])


@contextmanager
def evaluating(module: nn.Module) -> Iterator[None]:
    """Run the block with ``module`` (all its submodules) in eval mode, then restore each one's mode.

    Examples:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).train()
        >>> model[0].eval()  # a part the caller froze
        Linear(in_features=2, out_features=2, bias=True)
        >>> with evaluating(model):
        ...     print(model.training, model[1].training)
        False False
        >>> model.training, model[0].training, model[1].training
        (True, False, True)
    """
    modes = [(part, part.training) for part in module.modules()]
    if not any(training for _, training in modes):  # already in eval mode: nothing to restore
        yield
        return
    module.eval()
    try:
        yield
    finally:
        for part, training in modes:
            part.training = training


def in_eval_mode(method: Method) -> Method:
    """Decorate a model's method that runs the model: it runs under :func:`evaluating` (``self``).

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> class Scorer(nn.Module):
        ...     def __init__(self) -> None:
        ...         super().__init__()
        ...         self.dropout = nn.Dropout(0.5)
        ...     @in_eval_mode
        ...     def score(self, x: torch.Tensor) -> torch.Tensor:
        ...         return self.dropout(x)
        >>> scorer = Scorer().train()
        >>> scorer.score(torch.ones(4)).tolist(), scorer.training
        ([1.0, 1.0, 1.0, 1.0], True)
    """

    @functools.wraps(method)
    def evaluated(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        with evaluating(self):
            return method(self, *args, **kwargs)

    return cast(Method, evaluated)
