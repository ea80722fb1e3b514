"""text-embeddings-inference's routes: ``/embed`` (also ``POST /`` and ``/invocations``, as TEI serves an
embedding model), ``/embed_sparse`` (a SPLADE model's; ``/`` too for one, as TEI routes it, at commit
0d124dc9773be6ac5a9a57d8439aba9bbbf33273), ``/embed_all``, ``/tokenize``, ``/decode`` (and sbert's
``/decode`` of sparse vectors, ``inputs``), ``/info``, and its ``/rerank`` and
``/similarity`` bodies, with TEI's bodies and answer shapes, so that a TEI client
works unchanged.

Errors take TEI's shape, ``{"error": "<message>", "error_type": "Validation"}``, with TEI's statuses:
the status of each ``ErrorType`` is TEI's own mapping (``impl From<&ErrorType> for StatusCode`` in
``router/src/http/server.rs``, read at commit bc0fa321bfeb17126a9f0336835ec2b98d1946d1):
``Validation`` 413 (a list over ``--max-items``, an input over the model's limit with TEI's default
``truncate: false``, an unknown prompt, a body over the byte limit), ``Tokenizer`` 422 (a token id
the tokenizer does not have), ``Empty`` 400 (an empty list), ``Overloaded`` 429, ``Unhealthy`` 503,
``Backend`` 424 (the model failed). A body TEI's JSON extractor (axum's) refuses before TEI's code
runs keeps axum's status: 400 for bytes that are not JSON, 422 for a field of the wrong type,
missing or unknown, 405 for a wrong method; TEI writes those in plain text, sbert in TEI's shape
with ``error_type: "Validation"``. The message is sbert's, naming the field and item
(``inputs[2]: ...``). /rerank and /similarity answer so once their body is TEI's (:func:`marking`);
OpenAI's and sbert's routes keep sbert's shape. TEI's routes name no model: they serve the default
one (the first ``--model``) and name it in the ``x-sbert-model`` header.

Three things sbert does not do are refused by name rather than answered differently:
``truncation_direction: "Left"`` when an input is in fact over the limit (sbert keeps the start of a
long input), ``normalize: false`` for a model whose last layer normalizes (its vectors are unit
length by design), and /rerank's ``raw_scores: true`` without a cross-encoder (a cosine has no raw
form; 422 ``Validation``, as sbert's own body answers it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from sbert.modules.normalize import Normalize
from sbert.server import abilities, pair_jobs
from sbert.server.errors import TEI_VALIDATION, APIError
from sbert.server.responses import JSONResponse
from sbert.server.schemas import TEI_BODY, Body, decode_shape, parse_body
from sbert.server.scoring import cosine_scores, no_raw_scores, ranked
from sbert.server.service import Service, await_worker, read_body, services_of, version
from sbert.server.sparse_served import (
    refuse_dense,
    refuse_sparse,
    sparse_matrix,
    sparse_rows,
    tokens_of,
    width,
)
from sbert.server.tei_schemas import (
    DecodeBatchRequest,
    DecodeRequest,
    EmbedAllRequest,
    EmbedRequest,
    EmbedSparseRequest,
    SimilarityParameters,
    SparseDecodeRequest,
    TEIRerankRequest,
    TEISimilarityRequest,
    TokenizeRequest,
)

INPUTS = "inputs[{}]".format
# TEI's routes name no model: they serve the default one, and say which in this header.
MODEL_HEADER = "x-sbert-model"


def answer(service: Service, payload: Any) -> Response:
    """TEI's answer (a bare list), naming the model that made it in :data:`MODEL_HEADER`."""
    return JSONResponse(payload, headers={MODEL_HEADER: service.model_id})


async def embed(request: Request) -> Response:
    """TEI's ``POST /embed``: a vector per input."""
    service = services_of(request).default
    limits = service.limits
    body = parse_body(await read_body(request, limits), EmbedRequest, limits.max_items)
    return await embedded(service, body)


async def root(request: Request) -> Response:
    """TEI's ``POST /`` and ``/invocations``: /embed's body, or /similarity's (``inputs`` an object),
    which huggingface_hub's ``InferenceClient(base_url=URL).sentence_similarity`` posts there; a
    sparse model answers /embed's body as /embed_sparse (TEI routes ``/`` so for a SPLADE model)."""
    service = services_of(request).default
    limits = service.limits
    body: EmbedRequest | TEISimilarityRequest = parse_body(
        await read_body(request, limits), _root_shape, limits.max_items
    )
    if isinstance(body, TEISimilarityRequest):
        return await similarity(service, body)
    if abilities.is_sparse(service.model):
        return await sparse_embedded(service, _as_sparse(body))
    return await embedded(service, body)


def _root_shape(data: dict[str, Any]) -> Any:
    return TEISimilarityRequest if isinstance(data.get("inputs"), dict) else EmbedRequest


def _as_sparse(body: EmbedRequest) -> EmbedSparseRequest:
    """/embed's body (the one ``/`` declares) read as /embed_sparse's, as TEI's SPLADE ``/`` reads it:
    ``normalize`` does not apply (TEI's request struct ignores it); ``dimensions`` is refused (422:
    a sparse vector is not cut)."""
    if body.dimensions is not None:
        message = "dimensions: a sparse model's vectors are not cut (this route answers as /embed_sparse)"
        raise APIError(422, message, "dimensions", tei=(422, "Validation"))
    return EmbedSparseRequest(
        inputs=body.inputs,
        truncate=body.truncate,
        truncation_direction=body.truncation_direction,
        prompt_name=body.prompt_name,
    )


async def embed_sparse(request: Request) -> Response:
    """TEI's ``POST /embed_sparse``: a sparse vector per input, ``[{"index", "value"}, ...]``; a
    dense model is TEI's 424 ``Backend`` (:func:`~sbert.server.sparse_served.refuse_dense`)."""
    service = services_of(request).default
    limits = service.limits
    body = parse_body(await read_body(request, limits), EmbedSparseRequest, limits.max_items)
    return await sparse_embedded(service, body)


async def sparse_embedded(service: Service, body: EmbedSparseRequest) -> Response:
    """/embed_sparse's answer to a parsed body: each input's non-zero weights in index order."""
    prompt = service.prompt(body.prompt_name)  # the whole body is checked first
    refuse_dense(service.model, service.model_id)
    result = await service.embed_sparse(body.inputs, bool(body.truncate), INPUTS, prompt)
    refuse_left(body.truncation_direction, [i for i, _ in result.truncated], INPUTS)
    return answer(service, sparse_rows(result.vectors))


async def embedded(service: Service, body: EmbedRequest) -> Response:
    """/embed's answer to a parsed body (a sparse model: TEI's 424, its vectors are /embed_sparse's)."""
    model = service.model
    refuse_sparse(model, service.model_id)
    if not body.normalize and any(isinstance(layer, Normalize) for layer in model.layers):
        raise APIError(
            422,
            "normalize: false is not available: this model's last layer normalizes",
            "normalize",
            tei=TEI_VALIDATION,
        )
    if body.dimensions is not None and body.dimensions > model.dim:
        raise APIError(
            422,
            f"dimensions: {body.dimensions} is more than the model's {model.dim}",
            "dimensions",
            tei=TEI_VALIDATION,
        )
    prompt = service.prompt(body.prompt_name)
    result = await service.embed(body.inputs, bool(body.truncate), INPUTS, prompt)
    refuse_left(body.truncation_direction, [i for i, _ in result.truncated], INPUTS)
    vectors = result.vectors[:, : body.dimensions] if body.dimensions else result.vectors
    if body.normalize:
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return answer(service, np.ascontiguousarray(vectors, dtype=np.float32))


async def embed_all(request: Request) -> Response:
    """TEI's ``POST /embed_all``: each input's token vectors (a static model: its table's rows)."""
    service = services_of(request).default
    model, limits = service.model, service.limits
    body = parse_body(await read_body(request, limits), EmbedAllRequest, limits.max_items)
    refuse_sparse(model, service.model_id)  # TEI: "`embed_all` is not available for SPLADE models"
    texts = with_prompt(service.prompt(body.prompt_name), body.inputs)
    truncate, direction = bool(body.truncate), body.truncation_direction

    def job() -> list[np.ndarray]:
        counts = model.token_counts(texts, prompt="")
        refuse_left(direction, [i for i, n in enumerate(counts) if n > model.max_seq_length], INPUTS)
        return abilities.token_vectors(model, texts, truncate)

    rows = await await_worker(service.batcher, lambda: service.batcher.call(job, items=len(texts)), INPUTS)
    return answer(service, rows)


async def tokenize(request: Request) -> Response:
    """TEI's ``POST /tokenize``: each input's tokens with their character offsets."""
    service = services_of(request).default
    limits = service.limits
    body = parse_body(await read_body(request, limits), TokenizeRequest, limits.max_items)
    texts = with_prompt(service.prompt(body.prompt_name), body.inputs)
    special = body.add_special_tokens
    tokens = await await_worker(
        service.batcher,
        lambda: service.batcher.call(lambda: abilities.tokens_of(service.model, texts, special)),
    )
    return answer(service, tokens)


async def decode(request: Request) -> Response:
    """TEI's ``POST /decode``: token ids back to text."""
    service = services_of(request).default
    limits = service.limits
    body = parse_body(await read_body(request, limits), decode_shape, limits.max_items)
    if isinstance(body, SparseDecodeRequest):
        return await decode_sparse(service, body)
    assert isinstance(body, (DecodeRequest, DecodeBatchRequest))
    many = isinstance(body, DecodeBatchRequest)
    rows: list[list[int]] = body.ids if isinstance(body, DecodeBatchRequest) else [body.ids]
    name = (lambda i, j: f"ids[{i}][{j}]") if many else (lambda i, j: f"ids[{j}]")
    size = abilities.vocabulary_size(service.model)
    for i, row in enumerate(rows):
        for j, token in enumerate(row):
            if token >= size:
                param = name(i, j)
                message = f"{param}: {token} is not a token id of this model (vocabulary of {size})"
                # TEI's tokenizer refuses it: ErrorType::Tokenizer, 422
                raise APIError(422, message, param, tei=(422, "Tokenizer"))
    skip = body.skip_special_tokens
    texts = await await_worker(
        service.batcher,
        lambda: service.batcher.call(lambda: abilities.decode(service.model, rows, skip)),
    )
    return answer(service, texts)


async def decode_sparse(service: Service, body: SparseDecodeRequest) -> Response:
    """``/decode`` of sparse vectors: each one's ``{"token", "value"}``, heaviest first, at most ``top_k``."""
    model = service.model
    matrix = sparse_matrix(body, width(model))
    tokens = await await_worker(
        service.batcher,
        lambda: service.batcher.call(lambda: tokens_of(model, matrix, body.top_k), items=len(body.inputs)),
    )
    return answer(service, tokens)


async def info(request: Request) -> Response:
    """TEI's ``GET /info``: the default model."""
    service = services_of(request).default
    model, batching = service.model, service.batcher.settings
    return answer(
        service,
        {
            "model_id": service.model_id,
            "model_sha": None,
            "model_dtype": model.precision,
            "model_type": {"embedding": {"pooling": model.pooling.mode}},
            "max_concurrent_requests": service.max_concurrent,
            "max_input_length": model.max_seq_length,
            "max_batch_tokens": batching.max_batch_tokens,
            "max_batch_requests": None,
            "max_client_batch_size": service.limits.max_items,
            "auto_truncate": False,
            "tokenization_workers": 1,  # the batcher's one thread
            "version": version(),
            "sha": None,
            "docker_label": None,
        },
    )


async def rerank(service: Service, body: TEIRerankRequest) -> Response:
    """TEI's ``/rerank``: ``[{"index", "score"[, "text"]}]``, best first; the cross-encoder's score
    (``raw_scores``: its logit rather than the sigmoid), else the cosine of the served model's vectors
    (``raw_scores: true`` then a 422, as in Cohere's body)."""
    truncate, texts = bool(body.truncate), body.texts
    cross_encoder = service.cross_encoder
    if cross_encoder is not None:
        if truncate and body.truncation_direction.lower() == "left":
            raise APIError(
                422,
                "truncation_direction: Left is not supported with a cross-encoder",
                "truncation_direction",
                tei=TEI_VALIDATION,
            )
        scores = await await_worker(
            service.batcher,
            lambda: pair_jobs.rerank(
                service.batcher, cross_encoder, body.query, texts, truncate, body.raw_scores
            ),
            lambda i: f"texts[{i}]",
        )
    else:
        if body.raw_scores:  # refused as Cohere's body refuses it: a cosine has no raw form
            raise no_raw_scores(service.model_id)
        names: Callable[[int], str] = lambda i: f"texts[{i - 1}]" if i else "query"  # noqa: E731
        result = await service.embed([body.query, *texts], truncate, names)
        refuse_left(body.truncation_direction, [i for i, _ in result.truncated], names)
        scores = cosine_scores(result.vectors[0], result.vectors[1:])
    return answer(
        service,
        [
            {"index": i, "score": score, **({"text": texts[i]} if body.return_text else {})}
            for i, score in ranked(scores)
        ],
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
    return answer(service, cosine_scores(result.vectors[0], result.vectors[1:]))


def marking(
    request: Request, shape: Callable[[dict[str, Any]], type[Body]]
) -> Callable[[dict[str, Any]], type[Body]]:
    """``shape``, which tells the body a shared route got (/rerank, /similarity), noting a TEI body
    in the request: its errors from then on take TEI's shape (``routes.speaks_tei``)."""

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
        sbert.server.errors.APIError: truncation_direction: Left is not supported, and inputs[2] is over ...
    """
    if direction.lower() == "left" and truncated:
        raise APIError(
            422,
            f"truncation_direction: Left is not supported, and {name(truncated[0])} is over the model's "
            "limit (sbert keeps the start of a long input: send Right, or shorten it)",
            "truncation_direction",
            tei=TEI_VALIDATION,
        )


def with_prompt(prompt: str, texts: list[str]) -> list[str]:
    """The texts with ``prompt`` before each (``""``: as they are).

    Examples:
        >>> with_prompt("query: ", ["rain", "sun"])
        ['query: rain', 'query: sun']
    """
    return [prompt + text for text in texts] if prompt else texts
