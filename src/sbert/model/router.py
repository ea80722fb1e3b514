"""A model whose first module is sentence-transformers 5's ``Router``: a module stack per task.

As in sentence-transformers, the Router is a module in the model's sequence
(:class:`~sbert.modules.Router`), not another kind of model: ``SentenceEncoder(router)`` runs its
default route (its ``dim``, ``tokenizer``, ``forward`` and ``plan`` are that route's) and holds an
encoder for each other route, and ``encode(task=...)`` runs the route of that name:
``encode_query`` the ``query`` route, ``encode_document`` the ``document`` route, plain ``encode``
the default route. Every route gives vectors of one size (one vector space: an index of documents
is searched with queries). :class:`RouteMethods` is that part of the encoder; nothing here imports
the encoder, which imports this.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from torch import nn

from sbert.modules.router import Router, sequence

if TYPE_CHECKING:  # the encoder is not imported, even here: it imports this module
    from sbert.model.prompts import Prompts
    from sbert.modules import Pooling, StaticEmbedding, Transformer

Method = TypeVar("Method", bound=Callable[..., Any])


class RouteMethods:
    """The encoder's routes: none for most models, one stack per task for a Router model (a mixin).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained(device="cpu", precision="float32")
        >>> model.route_names, model.route("query") is model   # no routes: one stack for every task
        ((), True)
    """

    route_names: tuple[str, ...] = ()  # a Router model's routes, in order
    default_route: str | None = None  # the route of a plain encode(); None: it needs task=
    _own_route: str | None = None  # the route this encoder runs itself
    if TYPE_CHECKING:  # what the encoder that mixes this in provides
        name: str
        prompts: Prompts
        truncate_dim: int | None
        cpu_capabilities: Any
        input_module: Transformer | StaticEmbedding
        pooling: Pooling
        layers: nn.ModuleList
        _others: nn.ModuleDict

        @property
        def dim(self) -> int: ...
        @property
        def is_static(self) -> bool: ...

    def _set_routes(self, router: Router, after: Sequence[nn.Module]) -> None:
        """Hold an encoder of this class for every route of ``router`` but its own (each followed by
        ``after``, the modules after the Router), registered so that ``.to()`` and ``.eval()`` reach them.

        Raises:
            ValueError: the routes give vectors of different sizes.
        """
        self.route_names, self.default_route = router.route_names, router.default_route
        self._own_route = router.own_route
        encoder = cast(Any, type(self))
        self._others = nn.ModuleDict()
        for route in router.route_names:
            if route != self._own_route:
                stack = router.stack(route, after)
                self._others[route] = encoder(
                    *stack, name=f"{self.name} ({route} route)", prompts=self.prompts
                )
        sizes = {route: self.route(route).dim for route in self.route_names}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"the routes give vectors of different sizes {sizes}")

    def route(self, task: str | None = None) -> Self:
        """The encoder of ``task``'s route (``None``: the default route), with the model's prompts,
        ``truncate_dim`` and CPU; a model without routes runs itself for every task, as
        sentence-transformers does.

        Raises:
            ValueError: ``task`` names no route, or it is ``None`` and there is no default route.
        """
        if not self.route_names:
            return self
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
        encoder: Self = self._others[name]  # type: ignore[assignment]
        encoder.prompts, encoder.truncate_dim = self.prompts, self.truncate_dim
        encoder.cpu_capabilities = self.cpu_capabilities
        return encoder

    def stacks(self) -> list[Self]:
        """The encoders this model runs: itself (a Router model: one per route, its own first)."""
        return [self, *(self.route(name) for name in self.route_names if name != self._own_route)]

    def saved_modules(self) -> list[nn.Module]:
        """The modules ``modules.json`` lists: the stack's, or one Router holding every route's
        stack (the modules after the Router included, as sbert has always written it)."""
        if not self.route_names:
            return _stack_of(self)
        return [Router({name: _stack_of(self.route(name)) for name in self.route_names}, self.default_route)]


def routed(method: Method) -> Method:
    """Decorate a model's method that takes ``task=``: it runs on :meth:`RouteMethods.route` of that
    task (a Router model's route, with the model's prompts; a model without routes: itself).

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained(device="cpu", precision="float32")
        >>> model.encode("rain", task="query").shape  # no routes: one stack for every task
        (384,)
    """

    @functools.wraps(method)
    def on_route(self: RouteMethods, *args: Any, task: str | None = None, **kwargs: Any) -> Any:
        return method(self.route(task), *args, **kwargs)

    return cast(Method, on_route)


def _stack_of(encoder: Any) -> list[nn.Module]:
    return sequence(encoder.input_module, encoder.pooling, list(encoder.layers))


class _RouterModel(type):
    """``RouterEncoder(...)`` builds a :class:`~sbert.SentenceEncoder` with a Router; ``isinstance(model,
    RouterEncoder)`` tells a model with routes."""

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, nn.Module) and bool(getattr(instance, "route_names", ()))

    def __call__(  # type: ignore[override]
        cls,
        routes: Mapping[str, Any],
        default_route: str | None = None,
        name: str | None = None,
        prompts: Prompts | None = None,
    ) -> Any:
        if not routes:
            raise ValueError("a Router model needs at least one route")
        router = Router({route: _stack_of(encoder) for route, encoder in routes.items()}, default_route)
        mine = routes[router.own_route]
        model = type(mine)(router, name=name or mine.name, prompts=prompts)  # the routes' class
        for route, encoder in routes.items():  # the settings of each route it runs
            built = model.route(route)
            built.requested_precision = encoder.requested_precision
            built.requested_backend = encoder.requested_backend
            built.calibration_sentences = encoder.calibration_sentences
        return model


class RouterEncoder(metaclass=_RouterModel):
    """A model with one stack per task, built from one :class:`~sbert.SentenceEncoder` per route
    (sentence-transformers' ``Router``); the result is a ``SentenceEncoder`` holding a
    :class:`~sbert.modules.Router`, and ``isinstance(model, RouterEncoder)`` is true of any model
    with routes (:meth:`~sbert.SentenceEncoder.from_pretrained` of a Router folder included).

    Args:
        routes: The encoder of each route by name (``"query"``, ``"document"``...), in order; the
            model runs their modules.
        default_route: The route of a plain ``encode()``; ``None``: ``encode()`` needs ``task``.
        name: What the model was loaded from, for display.
        prompts: The model's prompts (every route uses them).

    Raises:
        ValueError: no routes, a ``default_route`` that is not one of them, or routes whose
            vectors differ in size.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> from sbert.model.router import RouterEncoder
        >>> query = SentenceEncoder.from_pretrained(device="cpu", precision="float32")
        >>> document = SentenceEncoder.from_pretrained(device="cpu", precision="float32")
        >>> model = RouterEncoder({"query": query, "document": document}, default_route="document")
        >>> model.encode_query("how do I play the guitar?").shape
        (384,)
        >>> model.route_names, model.route("query").input_module is query.input_module
        (('query', 'document'), True)
    """
