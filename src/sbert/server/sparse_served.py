"""A sparse model (:class:`~sbert.SparseEncoder`, SPLADE) as the server serves it: the one place that
tells a served model's kind and adapts a sparse model to what the batcher and the handlers ask.

One server process serves one model per ``--model`` as before; a model is ``sparse`` when it is a
:class:`~sbert.SparseEncoder` (``sbert serve`` loads a SPLADE folder as one), else ``dense``. A
sparse model's requests go through the same :class:`~sbert.server.batcher.Batcher` as a dense
model's (one queue, one worker thread, requests merged into one ``encode()`` call): its ``encode``
answers a float32 CSR matrix ``(n, vocabulary)`` instead of a dense array, and the batcher hands
each request its rows of it (CSR slices by rows as an array does). What only a dense model can do
(/embed, /v1/embeddings, /similarity, a bi-encoder /rerank) is refused by :func:`refuse_sparse`;
TEI's /embed_sparse refuses a dense model as TEI does (424 ``Backend``). A sparse model's /search
runs over a sparse index (:class:`~sbert.index.sparse_index.SparseIndex`), its query on the query
route (:meth:`SparseServed.encode_query`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import scipy.sparse

from sbert.base.inputs import valid_utf8
from sbert.encoder.prompts import Prompts
from sbert.inference.plan import EnginePlan
from sbert.inference.planning import Planning
from sbert.inference.runner import RunOptions
from sbert.inference.runners import Runners
from sbert.modules import Tokenized
from sbert.modules.transformer import Transformer
from sbert.server import abilities
from sbert.server.abilities import is_sparse
from sbert.server.body_fields import FLOAT32_MAX
from sbert.server.errors import APIError, TEIErrorType
from sbert.server.tei_schemas import SparseDecodeRequest
from sbert.sparse import decode as decoding
from sbert.sparse.model import SparseEncoder
from sbert.sparse.vectors import to_csr

# TEI's message for /embed_sparse on a model without SPLADE pooling (core/src/infer.rs), and the
# error type and status it answers it with (Backend, 424).
NOT_SPLADE = "Model is not an embedding model with SPLADE pooling"
TEI_BACKEND: tuple[int, TEIErrorType] = (424, "Backend")


@dataclass(frozen=True)
class SpladePooling:
    """What TEI's ``/info`` says of a SPLADE model's pooling (``model_type.embedding.pooling``)."""

    mode: str = "splade"


class SparseServed:
    """A :class:`~sbert.SparseEncoder` with the members the server reads off a served model: its
    name, width (the vocabulary), token limit, prompts and engine; ``encode`` gives a CSR matrix.

    Not run by the tests: it wraps a loaded model (tests/server/test_embed_sparse.py serves a tiny
    random SPLADE model from a real server process).

    Examples:
        >>> served = SparseServed(SparseEncoder.from_pretrained("splade-folder"))  # doctest: +SKIP
        >>> served.encode(["rain"]).shape  # doctest: +SKIP
        (1, 30522)
    """

    is_sparse = True
    layers: tuple[Any, ...] = ()  # no Normalize layer: TEI's `normalize` does not apply
    pooling = SpladePooling()

    def __init__(self, encoder: SparseEncoder) -> None:
        self.encoder = encoder
        self.name = str(encoder.name)
        self.prompts = _prompts_of(encoder)

    @property
    def dim(self) -> int:
        """The vectors' width: the vocabulary size."""
        return int(self.encoder.dim)

    @property
    def max_seq_length(self) -> int:
        return int(self.encoder.max_seq_length)

    @property
    def tokenizer(self) -> Any:
        return self.encoder.tokenizer

    @property
    def input_module(self) -> Any:
        return self.encoder.input_module

    @property
    def planning(self) -> Planning:
        """The encoder's :class:`~sbert.inference.planning.Planning` (its runners' input module is the
        SPLADE body, :class:`~sbert.sparse.engine.SparseBody`)."""
        planning: Planning = self.encoder.planning
        return planning

    @property
    def runners(self) -> Runners:
        runners: Runners = self.encoder.runners
        return runners

    @property
    def takes_token_ids(self) -> bool:
        """Whether the batcher hands this model token ids tokenized on arrival
        (:class:`~sbert.server.tokens.ArrivalTokens`) and :meth:`encode_token_ids` runs them, cut as
        a dense model's merged batches are: the stack a plain ``encode()`` runs (a Router's default
        route; none: ``encode()`` raises, and so does the worker) reads a transformer's tokens, on
        the shared engine or on the exact path. Else (a static route, whose tokenizer is not
        thread-safe to share) :meth:`encode` tokenizes on the worker, then runs the same cuts."""
        return self._route_known() and isinstance(self.encoder.input_module, Transformer)

    @property
    def on_engine(self) -> bool:
        """Whether the shared engine's runners compute the vectors (the GPU pipeline on CUDA), not
        the exact float32 PyTorch path (a fixed plan: :func:`~sbert.sparse.engine.planning_of`)."""
        return not self.planning.fixed

    @property
    def plan(self) -> EnginePlan:
        """How ``encode()`` computes: the encoder's own plan (the engine keeps it to what ran)."""
        plan: EnginePlan = self.encoder.plan
        return plan

    @property
    def precision(self) -> str:
        return str(self.plan.precision.value)

    @property
    def backend(self) -> str:
        return str(self.plan.backend.value)

    def query_prompt(self, prompt_name: str | None = None, prompt: str | None = None) -> str | None:
        """As :meth:`sbert.SentenceEncoder.query_prompt`: the model's ``query`` prompt by default."""
        if prompt_name is None and prompt is None:
            prompt_name = self.prompts.query_name()
        return self.prompts.resolve(prompt_name, prompt)

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        prompt: str | None = None,
        show_progress_bar: bool | None = False,
        max_tokens: int | None = None,
        batch_cost_tokens: int | None = None,
        pack: bool = False,
    ) -> scipy.sparse.csr_matrix:
        """``(n, vocabulary)`` float32 CSR: ``encoder.encode``'s vectors with ``prompt`` before each
        sentence (``""`` or ``None``: none, not the model's default), the texts tokenized here and cut
        as :meth:`encode_token_ids` cuts them (the batcher runs it for a model that does not
        :attr:`takes_token_ids`; ``show_progress_bar``: accepted, no bar).

        Raises:
            ValueError: a Router model without a default route (``encode()``'s error).
        """
        self.encoder.route(None)  # a Router without a default route raises here, as encode() does
        texts, length = self.with_prompt(_valid(sentences), None, prompt or "")
        options = RunOptions(batch_size, max_tokens, batch_cost_tokens, pack, prompt_length=length)
        return self.encode_token_ids(self.token_ids(texts).ids, options)

    def encode_token_ids(self, ids: Sequence[Sequence[int]], options: RunOptions) -> scipy.sparse.csr_matrix:
        """``(n, vocabulary)`` float32 CSR of tokenized texts (prompt and special tokens in, cut to
        the limit), at most the model's ``max_active_dims`` non-zero each: the runner ``encode()``
        runs, batched as ``options`` say (the dense model's cuts, packing and budget), or the
        exact path in the same cuts (:func:`~sbert.sparse.engine.exact_batches`)."""
        # the prompt's length as encode() passes it: where the pooling leaves the prompt out, the
        # encoder then takes encode()'s own path for it
        vectors = self.encoder.encode_token_ids(
            ids, self.encoder.max_active_dims, options.prompt_length, options
        )
        return to_csr(vectors, self.dim)  # (n, vocabulary) dense float32 → CSR

    def with_prompt(
        self, texts: list[str], prompt_name: str | None = None, prompt: str | None = None
    ) -> tuple[list[str], int]:
        """The texts with the prompt before each, and the prompt's tokens the pooling leaves out."""
        prompted: tuple[list[str], int] = self.encoder.with_prompt(texts, prompt_name, prompt)
        return prompted

    def token_ids(self, texts: Sequence[str]) -> Tokenized:
        """Token ids of each text, cut to ``max_seq_length`` as ``encode()`` cuts them."""
        ids: Tokenized = self.planning.token_ids(texts)
        return ids

    def encode_query(self, sentences: Sequence[str], prompt: str | None = None) -> scipy.sparse.csr_matrix:
        """``(n, vocabulary)`` float32 CSR of search queries: ``encoder.encode_query`` (an
        inference-free model's query route), ``prompt`` before each (``""`` or ``None``: none)."""
        vectors = self.encoder.encode_query(
            _valid(sentences), prompt=prompt or "", show_progress_bar=False, sparse_format="scipy"
        )
        return to_csr(vectors, self.dim)

    def token_counts(
        self, sentences: Sequence[str], prompt_name: str | None = None, prompt: str | None = None
    ) -> list[int]:
        """Tokens of each sentence before truncation, special tokens and the prompt included."""
        text = self.prompts.resolve(prompt_name, prompt) or ""
        texts = _valid([text + sentence for sentence in sentences])
        module = self.encoder.input_module
        if isinstance(module, Transformer):  # an MLM transformer is one: its own count, casing included
            return module.token_counts(texts)
        # a static weight per token (an inference-free query side): no special tokens
        ids = self.tokenizer(texts, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        return [len(row) for row in ids]

    def _route_known(self) -> bool:
        """Whether a plain ``encode()`` has a stack to run: no Router, or a Router's default route
        (the encoder itself runs it: :meth:`~sbert.model.router.RouteMethods.route`)."""
        try:
            return self.encoder.route(None) is self.encoder
        except ValueError:  # a Router without a default route
            return False


def served(model: Any) -> Any:
    """The model as the server holds it: a :class:`~sbert.SparseEncoder` wrapped, any other as it is."""
    return SparseServed(model) if isinstance(model, SparseEncoder) else model


def refuse_sparse(model: Any, model_id: str) -> None:
    """A 422 (TEI's routes: TEI's 424 ``Backend``) when a route that gives or compares dense
    vectors gets a sparse model.

    Examples:
        >>> refuse_sparse(object(), "mini")  # a dense model: nothing to refuse
    """
    if is_sparse(model):
        raise APIError(
            422,
            f"model: {model_id!r} is a sparse (SPLADE) model, and this route needs dense vectors; "
            "its sparse vectors are at /embed_sparse",
            "model",
            "sparse_model",
            tei=TEI_BACKEND,
        )


def refuse_dense(model: Any, model_id: str) -> None:
    """TEI's 424 ``Backend`` when /embed_sparse gets a dense model, with TEI's message.

    Examples:
        >>> refuse_dense(object(), "mini")
        Traceback (most recent call last):
        ...
        sbert.server.errors.APIError: Model is not an embedding model with SPLADE pooling: 'mini' is a dense ...
    """
    if not is_sparse(model):
        raise APIError(
            422,
            f"{NOT_SPLADE}: {model_id!r} is a dense model (its vectors: /embed or /v1/embeddings)",
            "model",
            "dense_model",
            tei=TEI_BACKEND,
        )


def sparse_rows(vectors: scipy.sparse.csr_matrix) -> list[list[dict[str, Any]]]:
    """TEI's ``/embed_sparse`` answer: each row's non-zero ``{"index", "value"}`` in index order,
    the values float32 numpy scalars (written as float32's shortest text).

    Examples:
        >>> from sbert.server.responses import JSONResponse
        >>> rows = sparse_rows(scipy.sparse.csr_matrix(np.array([[0, 0.5, 0], [0, 0, 0]], dtype=np.float32)))
        >>> JSONResponse(rows).body
        b'[[{"index":1,"value":0.5}],[]]'
    """
    matrix = to_csr(vectors)  # sorted indices, no explicit zeros (TEI drops every 0.0)
    answer = []
    for row in range(matrix.shape[0]):
        start, stop = matrix.indptr[row], matrix.indptr[row + 1]
        indices, values = matrix.indices[start:stop].tolist(), matrix.data[start:stop]
        answer.append([{"index": index, "value": value} for index, value in zip(indices, values)])
    return answer


def width(model: Any) -> int:
    """How many indices a sparse vector of this model has: its vocabulary (a dense model's
    tokenizer's, whose token ids /decode reads the indices as)."""
    return model.dim if is_sparse(model) else abilities.vocabulary_size(model)


def sparse_matrix(body: SparseDecodeRequest, size: int) -> scipy.sparse.csr_matrix:
    """The body's vectors as a float32 CSR matrix ``(n, size)``: the weights of an index given twice
    add up, as a sparse tensor's do when coalesced (saturating at float32's largest); an index past the vocabulary is a 422 naming
    ``inputs[i][j].index`` (TEI's ``Tokenizer``, as for a token id it does not have).

    Examples:
        >>> body = SparseDecodeRequest.model_validate({"inputs": [[{"index": 3, "value": 0.5}], []]})
        >>> sparse_matrix(body, 5).toarray().tolist()
        [[0.0, 0.0, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]]
    """
    rows, indices, values = [], [], []
    for i, vector in enumerate(body.inputs):
        for j, weight in enumerate(vector):
            if weight.index >= size:
                param = f"inputs[{i}][{j}].index"
                message = (
                    f"{param}: {weight.index} is not an index of this model's vectors (vocabulary of {size})"
                )
                raise APIError(422, message, param, tei=(422, "Tokenizer"))
            rows.append(i)
            indices.append(weight.index)
            values.append(weight.value)
    # Repeated indices summed in float64, then float32 (a sum past its range saturates to its largest).
    places = (np.asarray(rows, dtype=np.int64), np.asarray(indices, dtype=np.int64))
    matrix = scipy.sparse.coo_matrix(
        (np.asarray(values, dtype=np.float64), places), shape=(len(body.inputs), size)
    )
    matrix = matrix.tocsr()
    matrix.data = np.clip(matrix.data, -FLOAT32_MAX, FLOAT32_MAX).astype(np.float32)
    matrix.eliminate_zeros()  # a weight of 0 is no weight: decode lists non-zero ones only
    matrix.sort_indices()
    return matrix


def tokens_of(model: Any, matrix: scipy.sparse.csr_matrix, top_k: int | None) -> list[list[dict[str, Any]]]:
    """Each row's ``{"token", "value"}``, heaviest first, ties by index (``SparseEncoder.decode``:
    a dense model's tokenizer is read the same way)."""
    decoded = cast(list[decoding.TokenWeights], decoding.decode(matrix, abilities.tokenizer_of(model), top_k))
    return [[{"token": token, "value": np.float32(value)} for token, value in row] for row in decoded]


def _valid(texts: Sequence[str]) -> list[str]:
    """The texts with lone surrogates (JSON's ``"\\ud800"``) replaced, as the dense model's tokenizing
    replaces them: a Rust tokenizer refuses them."""
    return [valid_utf8(text) for text in texts]


def _prompts_of(encoder: Any) -> Prompts:
    """The encoder's prompts as :class:`~sbert.encoder.prompts.Prompts` (its own, or read off
    sentence-transformers' ``prompts`` dict and ``default_prompt_name``)."""
    prompts = getattr(encoder, "prompts", None)
    if isinstance(prompts, Prompts):
        return prompts
    return Prompts(dict(prompts or {}), getattr(encoder, "default_prompt_name", None))
