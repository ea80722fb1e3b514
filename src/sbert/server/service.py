"""What every handler shares: the served model and its batcher, reading a body, awaiting the worker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from sbert.server.batcher import Batcher, Embedded, InputTooLong, Overloaded, ServerClosed
from sbert.server.schemas import APIError
from sbert.server.settings import Limits


@dataclass
class Service:
    """What the endpoints serve: the model (through its batcher), optional index and cross-encoder."""

    model: Any  # SentenceEncoder, used only on the batcher's thread
    batcher: Batcher
    model_id: str
    limits: Limits = field(default_factory=Limits)
    index: Any = None  # VectorIndex
    index_path: str | None = None
    cross_encoder: Any = None  # CrossEncoder
    created: int = field(default_factory=lambda: int(time.time()))
    max_concurrent: int = 512  # requests in flight before 429 (set by create_app)

    async def embed(
        self, texts: list[str], truncate: bool, name: Callable[[int], str], prompt: str = ""
    ) -> Embedded:
        """The texts' vectors from the batcher; ``name(i)`` names input i in an error (``input[3]``)."""
        return await await_worker(self.batcher, lambda: self.batcher.embed(texts, truncate, prompt), name)

    def prompt(self, prompt_name: str | None, query: bool = False) -> str:
        """The text put before each input ("": none); an unknown name is a 422 listing the model's."""
        try:
            text = self.model.query_prompt(prompt_name) if query else self.model.prompts.resolve(prompt_name)
        except ValueError as error:
            raise APIError(422, str(error), "prompt_name") from None
        return text or ""

    def check_model(self, name: str | None) -> None:
        """Refuse a request for another model rather than answer it with this one."""
        if name is not None and name not in (self.model_id, self.model.name):
            raise APIError(
                404, f"model: {name!r} is not served here; this server runs {self.model_id!r}", "model"
            )


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
        ) from None
