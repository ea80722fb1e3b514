"""sentence-transformers 5's ``Router`` model: a different module stack for queries and documents.

A Router model is a :class:`~sbert.SentenceEncoder` whose routes are themselves
``SentenceEncoder``\\ s: the model *is* the encoder of its default route (its ``dim``, ``tokenizer``,
``forward`` and ``plan`` are that route's), and ``encode(task=...)`` runs the route of that name:
``encode_query`` the ``query`` route, ``encode_document`` the ``document`` route, plain ``encode``
the default route, as sentence-transformers routes them. Every route gives vectors of one size (one
vector space: an index of documents is searched with queries).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from torch import nn

from sbert.encoder.model import SentenceEncoder
from sbert.encoder.model_io import save_router
from sbert.encoder.prompts import Prompts
from sbert.inference.plan import EnginePlan


class RouterEncoder(SentenceEncoder):
    """A model with one :class:`~sbert.SentenceEncoder` per task (sentence-transformers' ``Router``).

    Args:
        routes: The encoder of each route by name (``"query"``, ``"document"``...), in order.
        default_route: The route of a plain ``encode()``; ``None``: ``encode()`` needs ``task``.
        name: What the model was loaded from, for display.
        prompts: The model's prompts (every route uses them).

    Raises:
        ValueError: no routes, a ``default_route`` that is not one of them, or routes whose
            vectors differ in size.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.encoder.router import RouterEncoder
        >>> query = SentenceEncoder.from_pretrained(device="cpu", precision="float32")
        >>> document = SentenceEncoder.from_pretrained(device="cpu", precision="float32")
        >>> model = RouterEncoder({"query": query, "document": document}, default_route="document")
        >>> model.encode_query("how do I play the guitar?").shape
        (384,)
        >>> model.route_names, model.route("query") is query
        (('query', 'document'), True)
    """

    def __init__(
        self,
        routes: Mapping[str, SentenceEncoder],
        default_route: str | None = None,
        name: str | None = None,
        prompts: Prompts | None = None,
    ) -> None:
        if not routes:
            raise ValueError("a Router model needs at least one route")
        if default_route is not None and default_route not in routes:
            raise ValueError(f"default_route {default_route!r} is not a route ({', '.join(routes)})")
        sizes = {route: encoder.dim for route, encoder in routes.items()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"the routes give vectors of different sizes {sizes}")
        own = default_route or next(iter(routes))
        mine = routes[own]
        super().__init__(mine.input_module, mine.pooling, list(mine.layers), name or mine.name, prompts)
        self.default_route = default_route
        self.route_names = tuple(routes)
        self._own_route = own
        # The other routes (this model runs its own); registered, so .to() and .eval() reach them.
        self._others = nn.ModuleDict({route: encoder for route, encoder in routes.items() if route != own})
        self.requested_precision = mine.requested_precision  # the settings of the route it runs
        self.requested_backend = mine.requested_backend
        self.calibration_sentences = mine.calibration_sentences

    def route(self, task: str | None = None) -> SentenceEncoder:
        """The encoder of ``task``'s route (``None``: the default route), with the model's prompts,
        ``truncate_dim`` and CPU.

        Raises:
            ValueError: ``task`` names no route, or it is ``None`` and there is no default route.
        """
        name = self.default_route if task is None else task
        if name is None:
            raise ValueError(
                f"{self.name} has no default route: pass task= one of {', '.join(self.route_names)}"
            )
        if name == self._own_route:
            return self
        if name not in self._others:
            raise ValueError(
                f"no route for task {task!r}: {self.name} has the routes {', '.join(self.route_names)}"
            )
        encoder: SentenceEncoder = self._others[name]  # type: ignore[assignment]
        encoder.prompts, encoder.truncate_dim = self.prompts, self.truncate_dim
        encoder.cpu_capabilities = self.cpu_capabilities
        return encoder

    def stacks(self) -> list[SentenceEncoder]:
        """Every route's encoder, this model (its own route) first."""
        return [self, *(self.route(name) for name in self.route_names if name != self._own_route)]

    def encode(
        self, sentences: str | Iterable[str], *args: Any, task: str | None = None, **kwargs: Any
    ) -> Any:
        """:meth:`SentenceEncoder.encode <sbert.SentenceEncoder.encode>` by the route of ``task``
        (``"query"``, ``"document"``...; default: the default route), as sentence-transformers'
        ``encode(task=...)``."""
        return SentenceEncoder.encode(self.route(task), sentences, *args, **kwargs)

    def set_precision(self, precision: str | None = None, backend: str | None = None) -> EnginePlan:
        """:meth:`SentenceEncoder.set_precision <sbert.SentenceEncoder.set_precision>` for every
        route that runs a transformer (a static token table stays float32 on PyTorch); returns the
        default route's plan."""
        for encoder in self.stacks()[1:]:
            if not encoder.is_static:
                encoder.set_precision(precision, backend)
        return super().set_precision(precision, backend)

    def save(self, path: str | Path) -> None:
        """Save in sentence-transformers' Router layout, which sbert and sentence-transformers load."""
        stacks = {name: self.route(name) for name in self.route_names}
        save_router(
            Path(path),
            {name: (e.input_module, e.pooling, list(e.layers)) for name, e in stacks.items()},
            self.default_route,
            self.prompts,
        )
        self.save_similarity_fn_name(path)
