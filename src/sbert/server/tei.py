"""text-embeddings-inference's routes: ``/embed``, ``/embed_all``, ``/tokenize``, ``/decode``, ``/info``,
and its ``/rerank`` and ``/similarity`` bodies, with TEI's bodies and answer shapes, so that a TEI client
works unchanged.

Errors take TEI's shape, ``{"error": "<message>", "error_type": "Validation"}``, with TEI's statuses
(its ``ErrorType`` and the status ``router/src/http/server.rs`` gives each): 422 ``Validation`` for a
bad field, a list over ``--max-items`` or an input over the model's limit (TEI's default is
``truncate: false``); 400 ``Empty`` for an empty list; 429 ``Overloaded``; 503 ``Unhealthy`` while
draining; 424 ``Backend`` when the model fails; 413 ``Validation`` for a body over the byte limit. The
message is sbert's, naming the field and item (``inputs[2]: ...``). /rerank and /similarity answer so
once their body is TEI's (:func:`marking`); OpenAI's and sbert's routes keep sbert's shape.

Two things sbert does not do are refused by name rather than answered differently:
``truncation_direction: "Left"`` when an input is in fact over the limit (sbert keeps the start of a
long input), and ``normalize: false`` for a model whose last layer normalizes (its vectors are unit
length by design).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sbert.modules.normalize import Normalize
from sbert.server.batcher import InputTooLong
from sbert.server.openapi import TEI_BODY, version
from sbert.server.responses import JSONResponse
from sbert.server.schemas import (
    APIError,
    Body,
    DecodeBatchRequest,
    DecodeRequest,
    EmbedAllRequest,
    EmbedRequest,
    SimilarityParameters,
    TEIRerankRequest,
    TEISimilarityRequest,
    TokenizeRequest,
    decode_shape,
    parse_body,
)
from sbert.server.scoring import cosine_scores, cross_encoder_scores, ranked
from sbert.server.service import Service, await_worker, read_body

INPUTS = "inputs[{}]".format


def tei_routes(service: Service) -> list[Route]:
    """TEI's routes over ``service`` (``/rerank`` is shared: see :func:`rerank`)."""
    limits = service.limits
    model = service.model

    async def embed(request: Request) -> Response:
        body = parse_body(await read_body(request, limits), EmbedRequest, limits.max_items)
        if not body.normalize and any(isinstance(layer, Normalize) for layer in model.layers):
            raise APIError(
                422, "normalize: false is not available: this model's last layer normalizes", "normalize"
            )
        if body.dimensions is not None and body.dimensions > model.dim:
            raise APIError(
                422, f"dimensions: {body.dimensions} is more than the model's {model.dim}", "dimensions"
            )
        prompt = service.prompt(body.prompt_name)
        result = await service.embed(body.inputs, bool(body.truncate), INPUTS, prompt)
        refuse_left(body.truncation_direction, [i for i, _ in result.truncated], INPUTS)
        vectors = result.vectors[:, : body.dimensions] if body.dimensions else result.vectors
        if body.normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return JSONResponse(np.ascontiguousarray(vectors, dtype=np.float32))

    async def embed_all(request: Request) -> Response:
        body = parse_body(await read_body(request, limits), EmbedAllRequest, limits.max_items)
        texts = with_prompt(service.prompt(body.prompt_name), body.inputs)
        truncate, direction = bool(body.truncate), body.truncation_direction
        rows = await await_worker(
            service.batcher,
            lambda: service.batcher.call(
                lambda: token_vectors(model, texts, truncate, direction), items=len(texts)
            ),
            INPUTS,
        )
        return JSONResponse(rows)

    async def tokenize(request: Request) -> Response:
        body = parse_body(await read_body(request, limits), TokenizeRequest, limits.max_items)
        texts = with_prompt(service.prompt(body.prompt_name), body.inputs)
        special = body.add_special_tokens
        tokens = await await_worker(
            service.batcher, lambda: service.batcher.call(lambda: tokens_of(model, texts, special))
        )
        return JSONResponse(tokens)

    async def decode(request: Request) -> Response:
        body = parse_body(await read_body(request, limits), decode_shape, limits.max_items)
        assert isinstance(body, (DecodeRequest, DecodeBatchRequest))
        many = isinstance(body, DecodeBatchRequest)
        rows: list[list[int]] = body.ids if isinstance(body, DecodeBatchRequest) else [body.ids]
        name = (lambda i, j: f"ids[{i}][{j}]") if many else (lambda i, j: f"ids[{j}]")
        tokenizer = model.transformer.tokenizer
        size = len(tokenizer)
        for i, row in enumerate(rows):
            for j, token in enumerate(row):
                if token >= size:
                    param = name(i, j)
                    message = f"{param}: {token} is not a token id of this model (vocabulary of {size})"
                    raise APIError(422, message, param)
        skip = body.skip_special_tokens
        texts = await await_worker(
            service.batcher,
            lambda: service.batcher.call(lambda: tokenizer.batch_decode(rows, skip_special_tokens=skip)),
        )
        return JSONResponse(texts)

    async def info(_: Request) -> Response:
        batching = service.batcher.settings
        return JSONResponse(
            {
                "model_id": service.model_id,
                "model_sha": None,
                "model_dtype": model.precision,
                "model_type": {"embedding": {"pooling": model.pooling.mode}},
                "max_concurrent_requests": service.max_concurrent,
                "max_input_length": model.max_seq_length,
                "max_batch_tokens": batching.max_batch_tokens,
                "max_batch_requests": None,
                "max_client_batch_size": limits.max_items,
                "auto_truncate": False,
                "tokenization_workers": 1,  # the batcher's one thread
                "version": version(),
                "sha": None,
                "docker_label": None,
            }
        )

    return [
        Route("/embed", embed, methods=["POST"]),
        Route("/embed_all", embed_all, methods=["POST"]),
        Route("/tokenize", tokenize, methods=["POST"]),
        Route("/decode", decode, methods=["POST"]),
        Route("/info", info, methods=["GET"]),
    ]


async def rerank(service: Service, body: TEIRerankRequest) -> Response:
    """TEI's ``/rerank``: ``[{"index", "score"[, "text"]}]``, best first; the cross-encoder's score
    (``raw_scores``: its logit rather than the sigmoid), else the cosine of the served model's vectors."""
    truncate, texts = bool(body.truncate), body.texts
    cross_encoder = service.cross_encoder
    if cross_encoder is not None:
        if truncate and body.truncation_direction.lower() == "left":
            raise APIError(
                422,
                "truncation_direction: Left is not supported with a cross-encoder",
                "truncation_direction",
            )
        scores = await await_worker(
            service.batcher,
            lambda: service.batcher.call(
                lambda: cross_encoder_scores(cross_encoder, body.query, texts, truncate, raw=body.raw_scores),
                items=len(texts),
            ),
            lambda i: f"texts[{i}]",
        )
    else:
        names: Callable[[int], str] = lambda i: f"texts[{i - 1}]" if i else "query"  # noqa: E731
        result = await service.embed([body.query, *texts], truncate, names)
        refuse_left(body.truncation_direction, [i for i, _ in result.truncated], names)
        scores = cosine_scores(result.vectors[0], result.vectors[1:])
    return JSONResponse(
        [
            {"index": i, "score": score, **({"text": texts[i]} if body.return_text else {})}
            for i, score in ranked(scores)
        ]
    )


async def similarity(service: Service, body: TEISimilarityRequest) -> Response:
    """TEI's ``/similarity``: ``[cosine, ...]`` of each sentence to the source sentence."""
    parameters = body.parameters or SimilarityParameters()
    names: Callable[[int], str] = lambda i: (  # noqa: E731
        f"inputs.sentences[{i - 1}]" if i else "inputs.source_sentence"
    )
    texts = [body.inputs.source_sentence, *body.inputs.sentences]
    try:
        prompt = service.prompt(parameters.prompt_name)
    except APIError as error:
        error.param = "parameters.prompt_name"
        raise
    result = await service.embed(texts, bool(parameters.truncate), names, prompt)
    refuse_left(parameters.truncation_direction, [i for i, _ in result.truncated], names)
    return JSONResponse(cosine_scores(result.vectors[0], result.vectors[1:]))


def marking(
    request: Request, shape: Callable[[dict[str, Any]], type[Body]]
) -> Callable[[dict[str, Any]], type[Body]]:
    """``shape``, which tells the body a shared route got (/rerank, /similarity), noting a TEI body
    in the request: its errors from then on take TEI's shape (``openapi.speaks_tei``)."""

    def pick(data: dict[str, Any]) -> type[Body]:
        chosen = shape(data)
        if chosen in (TEIRerankRequest, TEISimilarityRequest):
            request.scope[TEI_BODY] = True
        return chosen

    return pick


def refuse_left(direction: str, truncated: Sequence[int], name: Callable[[int], str]) -> None:
    """422 when an input was cut and the client asked to keep its end, which sbert does not do.

    Examples:
        >>> refuse_left("Left", [], INPUTS)  # nothing was cut: the direction does not matter
        >>> refuse_left("left", [2], INPUTS)
        Traceback (most recent call last):
        ...
        sbert.server.schemas.APIError: truncation_direction: Left is not supported, and inputs[2] is over ...
    """
    if direction.lower() == "left" and truncated:
        raise APIError(
            422,
            f"truncation_direction: Left is not supported, and {name(truncated[0])} is over the model's "
            "limit (sbert keeps the start of a long input: send Right, or shorten it)",
            "truncation_direction",
        )


def with_prompt(prompt: str, texts: list[str]) -> list[str]:
    """The texts with ``prompt`` before each (``""``: as they are).

    Examples:
        >>> with_prompt("query: ", ["rain", "sun"])
        ['query: rain', 'query: sun']
    """
    return [prompt + text for text in texts] if prompt else texts


def token_vectors(model: Any, texts: list[str], truncate: bool, direction: str) -> list[np.ndarray]:
    """Each text's last-layer token vectors, special tokens included (PyTorch, float32); runs on the
    batcher's thread (the tokenizer's one user).

    Raises:
        InputTooLong: a text is over the model's limit and ``truncate`` is false.
    """
    limit = model.max_seq_length
    counts = model.token_counts(texts, prompt="")  # the prompt is in the texts already
    too_long = [i for i, count in enumerate(counts) if count > limit]
    if too_long and not truncate:
        raise InputTooLong(too_long[0], counts[too_long[0]], limit)
    refuse_left(direction, too_long, INPUTS)
    rows: list[np.ndarray] = []
    transformer = model.transformer
    with torch.inference_mode():
        for start in range(0, len(texts), 32):  # bounded memory for long lists
            ids = model.token_ids(texts[start : start + 32]).ids
            vectors = transformer(transformer.collate(ids)).float().numpy()
            rows += [np.ascontiguousarray(vectors[k, : len(row)]) for k, row in enumerate(ids)]
    return rows


def tokens_of(model: Any, texts: list[str], add_special_tokens: bool) -> list[list[dict[str, Any]]]:
    """TEI's ``SimpleToken`` list of each text: id, text, special, character start and stop; runs on
    the batcher's thread.

    Not run by the tests: ``model`` is the served bundled model (tests/server/test_tei.py asks a real
    server's /tokenize).

    Examples:
        >>> tokens_of(model, ["Rain"], add_special_tokens=False)  # doctest: +SKIP
        [[{'id': 4089, 'text': 'Rain', 'special': False, 'start': 0, 'stop': 4}]]
    """
    transformer = model.transformer
    lowered = [text.lower() for text in texts] if transformer.do_lower_case else texts
    encoded = transformer.tokenizer(
        lowered,
        add_special_tokens=add_special_tokens,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        truncation=False,
        verbose=False,
    )
    answer = []
    for text, encoding in zip(texts, encoded.encodings):
        tokens = []
        for token_id, token, (start, stop), special in zip(
            encoding.ids, encoding.tokens, encoding.offsets, encoding.special_tokens_mask
        ):
            if special:
                tokens.append({"id": token_id, "text": token, "special": True, "start": None, "stop": None})
            else:
                tokens.append(
                    {"id": token_id, "text": text[start:stop], "special": False, "start": start, "stop": stop}
                )
        answer.append(tokens)
    return answer
