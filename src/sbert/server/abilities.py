"""What the served model can do beyond ``encode``, asked in one place: its tokenizer (for /tokenize,
/decode and token-id inputs) and its token vectors (/embed_all).

A transformer model (:class:`~sbert.SentenceEncoder`) has a Hugging Face tokenizer and a transformer
whose last layer gives each token's vector; a static model (``sbert.static.StaticEncoder``) has a
Rust ``tokenizers.Tokenizer`` with no special tokens, and its token table's rows are its token
vectors. Everything here runs on the batcher's thread (the tokenizer's one user).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch

from sbert.base.contracts import ServedModel
from sbert.inference.runner import RunOptions
from sbert.server.batcher import Embedded, InputTooLong
from sbert.server.settings import BatchSettings

Kind = Literal["dense", "sparse"]


def is_sparse(model: ServedModel) -> bool:
    """Whether ``model`` gives sparse vectors (a SPLADE model, :class:`~sbert.server.sparse_served.SparseServed`).

    Examples:
        >>> is_sparse(object())
        False
    """
    return bool(getattr(model, "is_sparse", False))


def kind(model: ServedModel) -> Kind:
    """``"sparse"`` or ``"dense"``: what /v1/models and /health say of a served model."""
    return "sparse" if is_sparse(model) else "dense"


def is_static(model: ServedModel) -> bool:
    """Whether ``model`` averages a token table (no transformer, no special tokens)."""
    return bool(getattr(model, "is_static", False))


def hf_tokenizer(model: ServedModel) -> Any:
    """A transformer's or a sparse model's Hugging Face tokenizer."""
    if is_sparse(model):
        return model.tokenizer  # type: ignore[attr-defined]
    return model.transformer.tokenizer  # type: ignore[attr-defined]


def tokenizer_of(model: ServedModel) -> Any:
    """The model's tokenizer: Hugging Face's, or a static model's Rust ``tokenizers.Tokenizer``."""
    return model.input_module.tokenizer if is_static(model) else hf_tokenizer(model)  # type: ignore[attr-defined]


def vocabulary_size(model: ServedModel) -> int:
    """Token ids the model's tokenizer knows (``0`` to this, less one)."""
    if is_static(model):
        return int(model.input_module.tokenizer.get_vocab_size())  # type: ignore[attr-defined]
    return len(hf_tokenizer(model))


def decode(model: ServedModel, rows: list[list[int]], skip_special_tokens: bool) -> list[str]:
    """Each list of token ids back to text."""
    if is_static(model):
        return list(model.input_module.tokenizer.decode_batch(rows, skip_special_tokens=skip_special_tokens))  # type: ignore[attr-defined]
    return list(hf_tokenizer(model).batch_decode(rows, skip_special_tokens=skip_special_tokens))


def tokens_of(model: ServedModel, texts: list[str], add_special_tokens: bool) -> list[list[dict[str, Any]]]:
    """TEI's ``SimpleToken`` list of each text: id, text, special, character start and stop.

    Not run by the tests: ``model`` is a served model (tests/server/test_tei.py asks a real server's
    /tokenize, a transformer's and a static model's).

    Examples:
        >>> tokens_of(model, ["Rain"], add_special_tokens=False)  # doctest: +SKIP
        [[{'id': 4089, 'text': 'Rain', 'special': False, 'start': 0, 'stop': 4}]]
    """
    if is_static(model):  # no special tokens: a static model's tokenizer adds none
        encodings = model.input_module.tokenizer.encode_batch(texts, add_special_tokens=False)  # type: ignore[attr-defined]
    else:
        # do_lower_case lowers inside the tokenizer (sbert.modules.lowercase), as in encode().
        encodings = hf_tokenizer(model)(
            texts,
            add_special_tokens=add_special_tokens,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            truncation=False,
            verbose=False,
        ).encodings
    answer = []
    for text, encoding in zip(texts, encodings):
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


def token_vectors(model: ServedModel, texts: list[str], truncate: bool) -> list[np.ndarray]:
    """Each text's token vectors (float32), in order: a transformer's last layer, special tokens
    included, or a static model's token-table rows.

    Raises:
        InputTooLong: a text is over the model's limit and ``truncate`` is false.
    """
    limit = model.max_seq_length
    counts = model.token_counts(texts, prompt="")  # the prompt is in the texts already
    too_long = [i for i, count in enumerate(counts) if count > limit]
    if too_long and not truncate:
        raise InputTooLong(too_long[0], counts[too_long[0]], limit)
    rows: list[np.ndarray] = []
    with torch.inference_mode():
        for start in range(0, len(texts), 32):  # bounded memory for long lists
            ids = model.token_ids(texts[start : start + 32]).ids  # type: ignore[attr-defined]
            if is_static(model):
                table = model.input_module.embedding.weight  # type: ignore[attr-defined]  # (vocabulary, dim)
                rows += [table[torch.tensor(row, dtype=torch.long)].float().numpy() for row in ids]
                continue
            transformer = model.transformer  # type: ignore[attr-defined]
            vectors = transformer(transformer.collate(ids)).float().numpy()  # (batch, seq, hidden)
            rows += [np.ascontiguousarray(vectors[k, : len(row)]) for k, row in enumerate(ids)]
    return rows


def embed_ids(
    model: ServedModel, rows: list[list[int]], truncate: bool, settings: BatchSettings | None = None
) -> Embedded:
    """Vectors of inputs given as token ids (OpenAI's ``input: [[101, 2023]]``): each row is a text's
    tokens without special tokens, and the model adds its own as for text (a transformer's
    ``[CLS]`` and ``[SEP]``; a static model has none), then runs them on the engine ``encode()``
    runs text on (its precision and backend, batched and packed as ``settings`` say), so a text
    and its token ids get one vector.

    Raises:
        InputTooLong: a row, with its special tokens, is over the model's limit and ``truncate`` is false.
    """
    limit = model.max_seq_length
    before, after = ([], []) if is_static(model) else special_tokens(model.transformer.tokenizer)  # type: ignore[attr-defined]
    special = len(before) + len(after)
    counts = [len(row) + special for row in rows]
    too_long = [i for i, count in enumerate(counts) if count > limit]
    if too_long and not truncate:
        raise InputTooLong(too_long[0], counts[too_long[0]], limit)
    ids = [before + row[: limit - special] + after for row in rows]
    settings = settings or BatchSettings()
    options = RunOptions(settings.max_batch_size, settings.max_batch_tokens, pack=settings.pack)
    vectors = model.encode_token_ids(ids, options)  # (n, dim) float32
    return Embedded(vectors.numpy(), counts, limit)


def special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after one text's tokens (BERT: ``[CLS]``, ``[SEP]``),
    read off a probe text tokenized with and without them (transformers 5 keeps no
    ``build_inputs_with_special_tokens``)."""
    probe = "rain"
    full = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    bare = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    start = next(i for i in range(len(full) - len(bare) + 1) if full[i : i + len(bare)] == bare)
    return full[:start], full[start + len(bare) :]
