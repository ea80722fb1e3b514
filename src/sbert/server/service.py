"""What every handler shares: the served model and its batcher, reading a body, awaiting the worker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from starlette.requests import Request

from sbert.base.contracts import ServedModel
from sbert.server.abilities import Kind, kind
from sbert.server.batcher import Batcher, Embedded, InputTooLong, Overloaded, ServerClosed
from sbert.server.errors import TEI_VALIDATION, APIError
from sbert.server.serving_plan import ServingPlan, default_batch_tokens
from sbert.server.settings import Limits
from sbert.server.sparse_served import refuse_sparse


@dataclass
class Service:
    """What the endpoints serve: the model (through its batcher), optional index and cross-encoder.

    ``model_id`` is the name answers give; ``aliases`` are further names a request may use for the
    model (``--served-model-name``, e.g. ``text-embedding-3-small``).
    """

    model: ServedModel  # used only on the batcher's thread
    batcher: Batcher
    model_id: str
    limits: Limits = field(default_factory=Limits)
    index: Any = None  # VectorIndex
    index_path: str | None = None
    cross_encoder: Any = None  # CrossEncoder
    created: int = field(default_factory=lambda: int(time.time()))
    max_concurrent: int = 512  # requests in flight before 429 (set by create_app)
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        """Every name a request may give this model: ``model_id`` first, then the aliases."""
        return [self.model_id, *(alias for alias in self.aliases if alias != self.model_id)]

    async def embed(
        self, texts: list[str], truncate: bool, name: Callable[[int], str], prompt: str = ""
    ) -> Embedded:
        """The texts' dense vectors from the batcher; ``name(i)`` names input i in an error
        (``input[3]``). A sparse model is refused (422; TEI's routes: 424 ``Backend``)."""
        refuse_sparse(self.model, self.model_id)
        return await await_worker(self.batcher, lambda: self.batcher.embed(texts, truncate, prompt), name)

    async def embed_sparse(
        self, texts: list[str], truncate: bool, name: Callable[[int], str], prompt: str = ""
    ) -> Embedded:
        """A sparse model's vectors (``Embedded.vectors`` a float32 CSR matrix) from the batcher."""
        return await await_worker(self.batcher, lambda: self.batcher.embed(texts, truncate, prompt), name)

    @property
    def kind(self) -> Kind:
        """``dense`` or ``sparse``: what the model gives."""
        return kind(self.model)

    def serving_plan(self) -> ServingPlan:
        """The device, the engine plan, the runner and the token budget the batches run on."""
        settings = self.batcher.settings
        tokens = settings.max_batch_tokens or default_batch_tokens(self.model)
        return ServingPlan.of(self.model, tokens, settings.pack)

    def prompt(self, prompt_name: str | None, query: bool = False) -> str:
        """The text put before each input ("": none); an unknown name is a 422 listing the model's."""
        try:
            text = self.model.query_prompt(prompt_name) if query else self.model.prompts.resolve(prompt_name)
        except ValueError as error:
            raise APIError(422, str(error), "prompt_name", tei=TEI_VALIDATION) from None
        return text or ""


async def read_body(request: Request, limits: Limits) -> bytes:
    """The body, refused with 413 as soon as it passes ``max_body_bytes`` (declared or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise APIError(413, f"body: {declared} bytes, more than the limit of {limits.max_body_bytes}", "body")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise APIError(413, f"body: more than the limit of {limits.max_body_bytes} bytes", "body")
        chunks.append(chunk)
    return b"".join(chunks)


async def await_worker(
    batcher: Batcher,
    submit: Callable[[], Any],
    name: Callable[[int], str] = str,
) -> Any:
    """Queue work on the batcher and await it; queue and model errors become HTTP errors."""
    try:
        future = submit()
    except Overloaded as error:
        raise APIError(429, str(error), headers={"retry-after": str(error.retry_after)}) from None
    except ServerClosed as error:
        raise APIError(503, str(error), headers={"connection": "close"}) from None
    try:
        return await asyncio.wrap_future(future)
    except InputTooLong as error:
        param = name(error.index)
        raise APIError(
            413,
            f"{param}: {error.tokens} tokens, more than the model's limit of {error.limit} "
            "(send truncate: true to cut it)",
            param,
            "input_too_long",
            tei=TEI_VALIDATION,  # TEI: "`inputs` must have less than 512 tokens"
        ) from None
    except APIError:  # a refusal decided on the worker thread (tei.refuse_left)
        raise
    except Exception as error:
        raise ModelFailed(error) from error


class ModelFailed(RuntimeError):
    """The model's work raised ``error`` on the batcher's thread: still a 500 on sbert's routes (the
    traceback logged), TEI's 424 "Backend" on TEI's routes, as TEI answers a failed inference."""

    def __init__(self, error: Exception) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error


class Services:
    """The served models by name, each with its own batcher; the first is the default (a request
    without ``model``, and TEI's routes, which name none). A model is addressed by its served names
    only (:attr:`Service.names`), and :attr:`names` lists them all: /v1/models, /health, the
    start-up line and every 404 read it.

    Not run by the tests: it needs two loaded model services (tests/server/test_models.py serves two
    models from a real server process).

    Examples:
        >>> services = Services([first, second])  # doctest: +SKIP
        >>> services.pick("second-name").model_id  # doctest: +SKIP
        'second-name'
    """

    def __init__(self, services: list[Service]) -> None:
        if not services:
            raise ValueError("a server needs at least one model")
        self.names = [name for service in services for name in service.names]
        repeated = sorted({name for name in self.names if self.names.count(name) > 1})
        if repeated:
            raise ValueError(
                f"two models served as {repeated[0]!r}: give each its own name (--model NAME=PATH)"
            )
        self.all = services
        self.default = services[0]
        self.by_name = {name: service for service in services for name in service.names}

    def pick(self, name: str | None) -> Service:
        """The model a request names (``None``: the default); another name is a 404 listing them."""
        if name is None:
            return self.default
        service = self.by_name.get(name)
        if service is None:
            raise APIError(404, f"model: {name!r} is not served here; {self.listing()}", "model")
        return service

    def listing(self) -> str:
        """``this server runs 'mini' (also 'text-embedding-3-small'), 'cls'``: every served name."""
        each = [
            repr(s.model_id) + (f" (also {', '.join(map(repr, s.names[1:]))})" if s.names[1:] else "")
            for s in self.all
        ]
        return f"this server runs {', '.join(each)}"

    @property
    def queued_items(self) -> int:
        return sum(service.batcher.queued_items for service in self.all)


def version() -> str:
    """sbert's version (``0.0.0`` run from a source tree)."""
    try:
        return metadata.version("sbert")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def services_of(request: Request) -> Services:
    """The served models of the app that got ``request`` (``create_app`` puts them in its state)."""
    services: Services = request.app.state.services
    return services
