"""SparseEncoder: text → one weight per vocabulary word (SPLADE), as sentence-transformers' SparseEncoder.

A SPLADE model scores every vocabulary word at every token with its masked-language-model head,
then keeps each word's largest score (:class:`~sbert.modules.SpladePooling`): a vector as wide as
the vocabulary with a few dozen to a few hundred non-zero weights, each of them a word, which an
inverted index searches. The inference-free variant weighs a query's own words from a table
(:class:`~sbert.modules.SparseStaticEmbedding`, the ``query`` route of a
:class:`~sbert.modules.Router`); CSR puts a top-k autoencoder on a dense model
(:class:`~sbert.modules.SparseAutoEncoder`). Folders are sentence-transformers 6.2's
(:mod:`sbert.sparse.format`); the vectors are its vectors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from sbert.base.inputs import check_max_seq_length
from sbert.base.modes import in_eval_mode
from sbert.inference.plan import PlanRequest
from sbert.inference.planning import Planning
from sbert.inference.runner import RunOptions
from sbert.model.base import ModelBase, PlannedAttributes
from sbert.model.encoding import EncodeRequest
from sbert.model.hub import resolve_model_path
from sbert.model.prompts import PromptMethods, Prompts
from sbert.model.router import RouteMethods
from sbert.modules import (
    Pooling,
    Router,
    SparseAutoEncoder,
    SparseStaticEmbedding,
    SpladePooling,
)
from sbert.modules.module import Module
from sbert.sparse import decode as decoding
from sbert.sparse.engine import exact_batches, fast_vectors, planning_of
from sbert.sparse.format import (
    LoadsSparseByName,
    SparseInput,
    read_sparse_model,
    split_stack,
    stack_dim,
    write_sparse_model,
)
from sbert.sparse.output import check_max_active_dims, check_sparse_format, encoded, finish
from sbert.sparse.scores import SIMILARITY_FUNCTIONS, scores
from sbert.sparse.vectors import keep_top_k


class SparseEncoder(PromptMethods, RouteMethods, PlannedAttributes, ModelBase, metaclass=LoadsSparseByName):  # type: ignore[misc]
    """An input module, its pooling and layers that make sparse vectors; or a Router of such stacks.

    Built from a name or path (``SparseEncoder("path", device="cpu")``) it loads as
    :meth:`from_pretrained` does, as sentence-transformers' constructor.

    Args:
        input_module: An :class:`~sbert.modules.MLMTransformer` (SPLADE), a
            :class:`~sbert.modules.SparseStaticEmbedding`, a dense
            :class:`~sbert.modules.Transformer` (CSR), or a :class:`~sbert.modules.Router` of such
            stacks (the model runs its default route and holds the others, as
            :class:`~sbert.SentenceEncoder` does).
        pooling: ``SpladePooling`` after an MLM transformer, ``Pooling`` before an autoencoder.
        layers: A ``SparseAutoEncoder`` (CSR), else none.
        name: What the model was loaded from, for display.
        prompts: The model's prompts.
        max_active_dims: Keep at most this many non-zero weights per vector (default: none for
            SPLADE, the autoencoder's ``k`` for CSR).

    Examples:
        >>> import importlib.util
        >>> from pathlib import Path
        >>> folder = Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model"
        >>> model = SparseEncoder.from_pretrained(folder, device="cpu")
        >>> vectors = model.encode(["what causes rain?", "Clouds drop water."])
        >>> vectors.shape, vectors.is_sparse
        (torch.Size([2, 30522]), True)
        >>> [token for token, _ in model.decode(vectors[0], top_k=3)]
        ['rain', 'causes', 'cause']
    """

    is_sparse = True  # model identities and the search tier tell sparse models by it
    input_module: SparseInput  # type: ignore[assignment]
    pooling: SpladePooling | Pooling | None  # type: ignore[assignment]

    def __init__(
        self,
        input_module: SparseInput | Router,
        pooling: SpladePooling | Pooling | None = None,
        layers: Sequence[nn.Module] = (),
        name: str | None = None,
        prompts: Prompts | None = None,
        max_active_dims: int | None = None,
    ) -> None:
        if not isinstance(input_module, Module):
            raise TypeError(
                f"SparseEncoder takes modules or a model name or path, not {type(input_module).__name__}"
            )
        router, after = (input_module, list(layers)) if isinstance(input_module, Router) else (None, [])
        modules = router.modules_of(router.own_route) + after if router is not None else [input_module]
        if router is None:
            modules += [*([pooling] if pooling is not None else []), *layers]
        first, pooling, rest = split_stack(modules, Path(name or "SparseEncoder"))
        super().__init__()
        self.input_module, self.pooling, self.layers = first, pooling, nn.ModuleList(rest)
        self.name = name or "unnamed"  # the planning's (PlannedAttributes), made for these modules
        self.prompts = prompts or Prompts()
        self.source: str | None = None
        # What a Router hands its routes (RouteMethods); sparse vectors keep every dimension.
        self.truncate_dim: int | None = None
        self._similarity_fn_name: str | None = None
        autoencoder = next((layer for layer in rest if isinstance(layer, SparseAutoEncoder)), None)
        self.max_active_dims = (
            max_active_dims if max_active_dims is not None or autoencoder is None else autoencoder.k
        )
        if router is not None:
            self._set_routes(router, after)

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        max_seq_length: int | None = None,
        device: str | torch.device | None = None,
        precision: str = "auto",
        backend: str = "auto",
        max_active_dims: int | None = None,
    ) -> SparseEncoder:
        """Load a sparse model: a sentence-transformers SparseEncoder folder, a Hugging Face
        ``*ForMaskedLM`` folder (SPLADE, max pooling) or a hub id.

        Args:
            name_or_path: A local directory or a hub id ``org/name`` (needs internet).
            max_seq_length: Truncate inputs to this many tokens (default: the saved or model limit).
            device: ``"cpu"``, ``"cuda"``...; default CUDA when available, else CPU.
            precision: The compute precision asked for (:meth:`sbert.SentenceEncoder.from_pretrained`'s
                choices, kept in :attr:`requested_precision`; :attr:`plan` says what runs). ``"auto"`` is bf16
                on a CPU that multiplies bf16 natively, else float32; ``"float32"`` stays within
                1e-5 of sentence-transformers (docs/guides/sparse.md, Speed).
            backend: ``"auto"``, ``"torch"`` or ``"openvino"``, as ``precision``.
            max_active_dims: Keep at most this many non-zero weights per vector (overrides the saved one).

        Raises:
            ModelLoadError: a dense model, an MLM folder without its head, a file missing or unreadable.
            ValueError: ``max_active_dims`` that is not a positive whole number, an unknown precision
                or backend.
        """
        request = PlanRequest.of(precision, backend)
        check_max_active_dims(max_active_dims)
        check_max_seq_length(max_seq_length, None, str(name_or_path))
        path = resolve_model_path(name_or_path)
        parts = read_sparse_model(path, max_seq_length=max_seq_length)
        name = str(name_or_path)
        # the saved value is checked where every value is: the max_active_dims setter
        model = cls(parts.input_module, parts.pooling, parts.layers, name, parts.prompts,
                    max_active_dims if max_active_dims is not None else parts.max_active_dims)  # fmt: skip
        model.source = str(path)
        for stack in model.stacks():  # a Router's routes compute as asked too
            stack.requested_precision, stack.requested_backend = request.precision, request.backend
        if parts.similarity_fn_name is not None:
            model.similarity_fn_name = parts.similarity_fn_name
        return model.placed(device)

    def _write(self, path: Path) -> None:
        """sentence-transformers' SparseEncoder folder, which both libraries load."""
        write_sparse_model(
            path, self.saved_modules(), self.prompts, self.similarity_fn_name, self.max_active_dims
        )

    @property
    def max_active_dims(self) -> int | None:
        """Keep at most this many non-zero weights per vector (``None``: all); settable."""
        return self._max_active_dims

    @max_active_dims.setter
    def max_active_dims(self, value: int | None) -> None:
        self._max_active_dims = check_max_active_dims(value)

    @property
    def dim(self) -> int:
        """The width of the vectors: the vocabulary size (an autoencoder's width for CSR)."""
        return stack_dim(self.input_module, self.pooling, list(self.layers))

    vocab_size = dim

    def get_embedding_dimension(self) -> int:
        """:attr:`dim` (sentence-transformers' name; ``get_sentence_embedding_dimension`` too)."""
        return self.dim

    get_sentence_embedding_dimension = get_embedding_dimension

    @property
    def is_static(self) -> bool:
        return isinstance(self.input_module, SparseStaticEmbedding)

    @property
    def pooling_mode(self) -> str:
        """How the stacks make their vectors, for model identities: ``splade_max``, ``static``, ``mean+sae``...
        (a Router: each route's, by name)."""
        if self.route_names:
            return ",".join(f"{name}:{self.route(name)._own_mode()}" for name in self.route_names)
        return self._own_mode()

    def _own_mode(self) -> str:
        if self.pooling is None:
            return "static"
        return self.pooling.mode + ("+sae" if self.layers else "")

    @property
    def similarity_fn_name(self) -> str:
        """What :meth:`similarity` computes: ``dot`` (default) or ``cosine``; settable."""
        return self._similarity_fn_name or "dot"

    @similarity_fn_name.setter
    def similarity_fn_name(self, name: Any) -> None:
        name = getattr(name, "value", name)  # sentence-transformers' SimilarityFunction enum
        if name is not None and name not in SIMILARITY_FUNCTIONS:
            raise ValueError(
                f"similarity_fn_name {name!r}: a sparse encoder scores with {', '.join(SIMILARITY_FUNCTIONS)}"
            )
        self._similarity_fn_name = name

    def tokenize(self, texts: Sequence[str]) -> dict[str, Tensor]:
        """The input features of ``texts`` (no prompt added): padded ``input_ids`` and ``attention_mask``."""
        return self.collate(self.input_module.tokenize(list(texts)).ids)

    def embed(self, features: dict[str, Tensor], max_active_dims: int | None = None) -> Tensor:
        """Dense vectors (batch, dim) of a batch from :meth:`collate`, with gradients where enabled;
        ``max_active_dims`` is the autoencoder's ``k`` (CSR) and else not applied here."""
        if isinstance(self.input_module, SparseStaticEmbedding):
            return self.input_module(features)  # (batch, vocab)
        tokens = self.input_module(features)  # (batch, seq, vocab) logits, or (batch, seq, hidden)
        if isinstance(self.pooling, SpladePooling):
            return self.pooling(tokens, features["attention_mask"])  # (batch, vocab)
        assert self.pooling is not None  # split_stack: a dense stack has its Pooling
        vectors = self.pooling(tokens, features["attention_mask"], int(features.get("prompt_length", 0)))
        for layer in self.layers:
            vectors = (
                layer(vectors, max_active_dims) if isinstance(layer, SparseAutoEncoder) else layer(vectors)
            )
        return vectors  # (batch, dim)

    def forward(self, features: dict[str, Tensor]) -> dict[str, Tensor]:
        """``{"sentence_embedding": (batch, dim)}`` dense vectors, as sentence-transformers' forward
        (what losses call)."""
        return {"sentence_embedding": self.embed(features, self.max_active_dims)}

    def encode_token_ids(
        self,
        token_ids: Sequence[Sequence[int]],
        max_active_dims: int | None = None,
        prompt_length: int = 0,
        options: RunOptions | None = None,
    ) -> Tensor:
        """Dense float32 vectors (n, dim) of one batch of tokenized texts, at most ``max_active_dims``
        non-zero each: the one step that :meth:`encode` runs per batch, by the sparse engine where
        :attr:`plan` names it (:mod:`sbert.sparse.engine`, batched as ``options`` say, as a dense
        model's runner batches), else by :meth:`exact_vectors`, cut as ``options`` say
        (:func:`~sbert.sparse.engine.exact_batches`; ``None``: ``token_ids`` are one batch already)."""
        fast = None if prompt_length else fast_vectors(self, token_ids, options)
        if fast is not None:
            return keep_top_k(fast, max_active_dims)
        if options is None:  # encode()'s length-sorted batch
            return self.exact_vectors(token_ids, max_active_dims, prompt_length)
        return exact_batches(self, token_ids, max_active_dims, prompt_length, options)

    def exact_vectors(
        self, token_ids: Sequence[Sequence[int]], max_active_dims: int | None = None, prompt_length: int = 0
    ) -> Tensor:
        """:meth:`encode_token_ids` by the modules themselves in float32 on PyTorch: sentence-transformers'
        arithmetic, operation for operation (the exact path)."""
        features = self.collate(token_ids)
        if prompt_length:
            features["prompt_length"] = torch.tensor(prompt_length)
        with torch.inference_mode():
            return keep_top_k(self.embed(features, max_active_dims), max_active_dims)

    @property
    def planning(self) -> Planning:  # type: ignore[override]
        """What :meth:`encode` computes with (:func:`sbert.sparse.engine.planning_of`): :attr:`plan`,
        :attr:`precision`, :attr:`backend` and what was asked for are its, as the dense encoder's."""
        return planning_of(self)

    @in_eval_mode  # dropout off, the caller's mode restored (sbert.base.modes)
    def encode(
        self,
        sentences: str | Iterable[str],
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        convert_to_tensor: bool = True,
        convert_to_sparse_tensor: bool = True,
        max_active_dims: int | None = None,
        sparse_format: str | None = None,
        *,
        task: str | None = None,
        device: str | torch.device | list[str] | None = None,
        save_to_cpu: bool = True,
        pool: Any = None,
        chunk_size: int | None = None,
    ) -> Any:
        """Sparse vectors of the sentences, in input order, on the CPU.

        Sentences are sorted by token length and each batch padded to its longest, as
        sentence-transformers batches; the vectors do not depend on the batch.

        Args:
            sentences: One string (one vector out) or a list of strings.
            prompt_name: The model's prompt of that name goes before every sentence.
            prompt: This text goes before every sentence (over ``prompt_name``).
            batch_size: Sentences per forward pass.
            show_progress_bar: Default: on from 1000 sentences.
            convert_to_tensor: One tensor (``False``: a list of 1-D tensors).
            convert_to_sparse_tensor: ``torch.sparse_coo`` (``False``: dense tensors).
            max_active_dims: Keep each vector's this many largest weights (default: the model's).
            sparse_format: sbert's forms, over the two flags: ``"torch"`` (sparse COO), ``"scipy"``
                (CSR) or ``"pairs"`` (``(indices, values)`` per vector).
            task: The Router's route to run (``encode_query``: ``"query"``).
            device: Move the model there first.
            save_to_cpu: Accepted, as sentence-transformers' (the vectors always come back on the CPU).
            chunk_size: Accepted, as sentence-transformers'.
            pool: Not available (sbert encodes in one process).

        Raises:
            TypeError: ``sentences`` is not a string or a list of strings; ``batch_size`` not a whole number.
            ValueError: ``max_active_dims`` or ``batch_size`` below 1, an unknown ``sparse_format``,
                ``prompt_name`` or ``task``.
        """
        max_active_dims = check_max_active_dims(max_active_dims)
        k = max_active_dims if max_active_dims is not None else self.max_active_dims
        route = self.route(task)
        if route is not self:  # a Router model: that route's stack, with this model's prompts and k
            return route.encode(sentences, prompt_name, prompt, batch_size, show_progress_bar, convert_to_tensor,
                                convert_to_sparse_tensor, k, sparse_format, device=device, pool=pool)  # fmt: skip
        check_sparse_format(sparse_format)
        request = EncodeRequest.of(
            self, sentences, prompt_name, prompt, batch_size, show_progress_bar, device, pool
        )
        matrix = encoded(self, request, k)  # (n, dim) CSR, in input order
        return finish(matrix, request.single, sparse_format, convert_to_tensor, convert_to_sparse_tensor)

    def prompt_tokens(self, text: str) -> int:
        """The prompt's tokens where the pooling leaves them out (CSR with ``include_prompt`` off), else 0."""
        if not isinstance(self.pooling, Pooling) or self.pooling.include_prompt:
            return 0
        return super().prompt_tokens(text)  # split_stack: a Pooling follows a Transformer

    def decode(self, embeddings: Any, top_k: int | None = None) -> Any:
        """Each vector's ``(token, weight)`` pairs, heaviest first (:func:`sbert.sparse.decode.decode`):
        one list for one vector, a list per vector for several."""
        return decoding.decode(embeddings, self.tokenizer, top_k)

    @staticmethod
    def sparsity(embeddings: Any) -> dict[str, float]:
        """``{"active_dims": mean non-zero weights, "sparsity_ratio": mean share of zeros}``."""
        return decoding.sparsity(embeddings)

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Tensor:
        """Scores (n1, n2) of every vector of ``embeddings1`` with every one of ``embeddings2``
        (:attr:`similarity_fn_name`; any sparse or dense form; :func:`sbert.sparse.scores.scores`)."""
        return scores(embeddings1, embeddings2, self.similarity_fn_name, self.dim)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Tensor:
        """Score (n,) of ``embeddings1[i]`` with ``embeddings2[i]`` for each ``i``."""
        return scores(embeddings1, embeddings2, self.similarity_fn_name, self.dim, pairwise=True)
