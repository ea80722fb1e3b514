"""The cross-encoder on sbert's engine: a BERT classifier split into the parts the runners take.

The runners of :mod:`sbert.inference.runners` compute ``pooling(transformer(token ids))`` on padded
batches (PyTorch float32 or bf16, OpenVINO), packed rows (OpenVINO) or, on CUDA, the GPU pipeline's
unpadded batches (:mod:`sbert.inference.cuda.pipeline`, fp16 by default). A BERT sequence classifier is
that with ``[CLS] → pooler → classifier`` as its pooling (:class:`PairHead`), so the bi-encoder's
plans, runners, compiled graphs and their probes serve it unchanged. Only one thing does not fit:
runners carry token ids alone, and a pair needs its segment ids (0 for the first sentence, 1 for the
second). Each id therefore carries its segment: ``id + segment · vocab_size`` (:func:`pair_ids`),
and the model's first step splits them again (:class:`PairModel`), inside the compiled graph too.

The classifier reads one vector a pair, the last layer's ``[CLS]``, so the padded body computes that
layer for ``[CLS]`` alone (:meth:`PairModel.first_token_vectors`): on all-MiniLM-L6-v2 a sixth of
the pass, 1.71× → 1.94× sentence-transformers' ``predict`` on an AVX2-only CPU in float32
(``benchmarks/cross_encoder_cuts.py``, 2026-11-29; docs/benchmarks.md). FastBert (bf16 on the CPU)
and the GPU pipeline do the same where the head says :attr:`PairHead.reads_first_token`, and so do
packed rows (``pack=True``, ``sbert serve``'s /rerank): each pair's ``[CLS]`` attends to its own
pair's keys and values in its row (:meth:`PairModel.packed_first_token_vectors`), +20% pairs/s
on packed rows on the same CPU (1.29× → 1.56× ``predict`` in ``cross_encoder_speed.py``'s packed side).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from sbert.inference.packing import block_diagonal_mask
from sbert.inference.runners import ModeOfModel
from sbert.modules import Tokenized, Transformer


@dataclass
class TokenizedPairs:
    """Token ids and segment ids (0 for A, 1 for B) of each pair, unpadded; how many were truncated."""

    ids: list[list[int]]
    token_types: list[list[int]]
    truncated: int

    @property
    def lengths(self) -> list[int]:
        return [len(ids) for ids in self.ids]


def tokenize_pairs(
    tokenizer: PreTrainedTokenizerBase, pairs: Sequence[tuple[str, str]], max_length: int
) -> TokenizedPairs:
    """``[CLS] A [SEP] B [SEP]`` per pair, unpadded, the longer sentence cut first past ``max_length``."""
    encoded = tokenizer(
        [a for a, _ in pairs],
        [b for _, b in pairs],
        truncation="longest_first",
        max_length=max_length,
        padding=False,
        return_attention_mask=False,
        return_token_type_ids=True,
    )
    truncated = sum(1 for encoding in encoded.encodings if encoding.overflowing)
    return TokenizedPairs(encoded["input_ids"], encoded["token_type_ids"], truncated)


def pair_ids(tokenized: TokenizedPairs, vocab_size: int) -> list[list[int]]:
    """Each token id with its segment folded in: ``id + segment · vocab_size``.

    Examples:
        >>> pair_ids(TokenizedPairs([[2, 7, 3, 9, 3]], [[0, 0, 0, 1, 1]], 0), vocab_size=100)
        [[2, 7, 3, 109, 103]]
    """
    return [
        [token + segment * vocab_size for token, segment in zip(ids, types)]
        for ids, types in zip(tokenized.ids, tokenized.token_types)
    ]


class PairModel(ModeOfModel, nn.Module):  # type: ignore[misc]
    """A BERT that takes :func:`pair_ids`: it splits each id into token and segment, then runs.

    It holds the classifier's head too, unused here, so that the runners' weight fingerprint
    (:class:`~sbert.base.weights.WeightsStamp`) sees a trained head and compiles again.
    """

    mode_of = "bert"  # its mode is the BERT's (ModeOfModel)

    def __init__(self, bert: Any, head: nn.Module) -> None:  # a transformers BertModel
        super().__init__()
        self.bert = bert
        self.head = head
        self.vocab_size = int(bert.config.vocab_size)

    @property
    def config(self) -> Any:
        """The BERT's config (the runners read its type and positions)."""
        return self.bert.config

    @property
    def embeddings(self) -> PairEmbeddings:
        """The embeddings as :class:`~sbert.inference.fast_bert.FastBert` reads them (bf16 on PyTorch)."""
        return PairEmbeddings(self.bert.embeddings, self.vocab_size)

    @property
    def encoder(self) -> Any:
        return self.bert.encoder

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        position_ids: Tensor | None = None,
        return_dict: bool = True,
    ) -> Any:
        tokens, segments = self._split(input_ids)
        return self.bert(
            input_ids=tokens,
            attention_mask=attention_mask,
            token_type_ids=segments,
            position_ids=position_ids,
            return_dict=True,
        )

    def _split(self, input_ids: Tensor) -> tuple[Tensor, Tensor]:
        """Token ids and segment ids (each (batch, seq)) of folded ids."""
        segments = torch.div(input_ids, self.vocab_size, rounding_mode="floor")  # (batch, seq)
        return input_ids - segments * self.vocab_size, segments

    def first_token_vectors(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """The last layer's vector of each row's first token (``[CLS]``), (batch, 1, hidden): all
        that the classifier reads. The layers below run on every token; the last one computes keys
        and values of every token but its query, attention output and feed-forward for ``[CLS]``
        alone, five sixths of a layer's matrix products (a sixth of a 6-layer pass) saved.

        Examples:
            >>> from transformers import BertConfig, BertModel
            >>> config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2,
            ...                     num_attention_heads=2, intermediate_size=16)
            >>> network = PairModel(BertModel(config).eval(), nn.Identity())
            >>> ids, mask = torch.tensor([[2, 7, 3, 59, 53]]), torch.ones(1, 5, dtype=torch.long)
            >>> whole = network(ids, mask).last_hidden_state[:, :1]
            >>> torch.allclose(network.first_token_vectors(ids, mask), whole, atol=1e-6)
            True
        """
        tokens, segments = self._split(input_ids)
        hidden = self.bert.embeddings(input_ids=tokens, token_type_ids=segments)  # (batch, seq, hidden)
        # (batch, 1, 1, seq): 0 on real tokens, the most negative float on padding
        padding = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        hidden = self._below_the_last_layer(hidden, padding)
        return _chosen_tokens_layer(self.bert.encoder.layer[-1], hidden, hidden[:, :1], padding)

    def packed_first_token_vectors(
        self, input_ids: Tensor, position_ids: Tensor, segment_ids: Tensor, token_index: Tensor
    ) -> Tensor:
        """:meth:`first_token_vectors` on packed rows (:class:`~sbert.inference.packing.PackedTransformer`
        calls it): the last layer's vector of each pair's first token (``token_index[:, 0]``, its
        place in the flattened rows), (pairs, 1, hidden). That token attends to its own pair's keys
        and values in its row (its row of the block-diagonal mask); the layers below run on every token.

        Examples:
            >>> from transformers import BertConfig, BertModel
            >>> from sbert.inference.packing import pass_feeds
            >>> config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2,
            ...                     num_attention_heads=2, intermediate_size=16)
            >>> network = PairModel(BertModel(config).eval(), nn.Identity())
            >>> ids = [[2, 7, 3, 59, 53], [2, 8, 3, 53], [2, 9, 9, 3, 58, 53]]
            >>> feeds = {k: torch.from_numpy(v) for k, v in pass_feeds(ids, [[0, 1], [2]]).items()}
            >>> packed = network.packed_first_token_vectors(*[feeds[k] for k in list(feeds)[:4]])
            >>> alone = [network(torch.tensor([row])).last_hidden_state[:, :1] for row in ids]
            >>> packed.shape, torch.allclose(packed, torch.cat(alone), atol=1e-6)
            (torch.Size([3, 1, 8]), True)
        """
        tokens, segments = self._split(input_ids)
        hidden = self.bert.embeddings(
            input_ids=tokens, token_type_ids=segments, position_ids=position_ids
        )  # (rows, T, hidden)
        mask = block_diagonal_mask(segment_ids)  # (rows, 1, T, T)
        hidden = self._below_the_last_layer(hidden, mask)
        first = token_index[:, 0]  # (pairs,)
        chosen = hidden.reshape(-1, 1, hidden.shape[-1])[first]  # (pairs, 1, hidden)
        own = mask.reshape(-1, 1, 1, mask.shape[-1])[first]  # (pairs, 1, 1, T): that token's mask row
        rows = torch.div(first, input_ids.shape[1], rounding_mode="floor")  # (pairs,): its row
        return _chosen_tokens_layer(self.bert.encoder.layer[-1], hidden, chosen, own, rows)

    def _below_the_last_layer(self, hidden: Tensor, mask: Tensor) -> Tensor:
        """``hidden`` (batch, seq, hidden) through every layer but the last, under the additive ``mask``."""
        for layer in self.bert.encoder.layer[:-1]:
            hidden = layer(hidden, mask)
        return hidden


def _chosen_tokens_layer(
    layer: Any, hidden: Tensor, chosen: Tensor, mask: Tensor, rows: Tensor | None = None
) -> Tensor:
    """A Hugging Face ``BertLayer`` on ``hidden`` (batch, seq, hidden), its output for chosen tokens
    only (n, 1, hidden): the same products as the whole layer's rows of those tokens.

    ``chosen`` (n, 1, hidden) is their input to the layer; token ``i`` attends to the keys and
    values of row ``rows[i]`` of ``hidden`` (row ``i`` without ``rows``) under its additive mask
    row ``mask[i]`` (n, 1, 1, seq)."""
    attention = layer.attention.self
    heads = (attention.num_attention_heads, attention.attention_head_size)
    # sizes as -1 or read from shapes, not len(): a traced graph keeps any batch size
    query = attention.query(chosen).view(-1, 1, *heads).transpose(1, 2)  # (n, heads, 1, d)
    key = attention.key(hidden).view(hidden.shape[0], -1, *heads).transpose(1, 2)  # (batch, heads, seq, d)
    value = attention.value(hidden).view(hidden.shape[0], -1, *heads).transpose(1, 2)
    if rows is not None:  # packed rows: each token's own row, computed once for all its row's tokens
        key, value = key[rows], value[rows]  # (n, heads, seq, d)
    context = nn.functional.scaled_dot_product_attention(
        query, key, value, mask, scale=attention.scaling
    )  # (n, heads, 1, d)
    attended = layer.attention.output(context.transpose(1, 2).reshape(-1, 1, attention.all_head_size), chosen)
    return layer.output(layer.intermediate(attended), attended)  # (n, 1, hidden)


class PairEmbeddings:
    """A BERT's embeddings seen through :func:`pair_ids`, for FastBert, which adds segment 0's vector
    to every token: the word table doubles, its second half holding each word plus the difference
    between segment 1's vector and segment 0's, so that a folded id looks up its own segment."""

    def __init__(self, embeddings: Any, vocab_size: int) -> None:
        self._embeddings, self.vocab_size = embeddings, vocab_size
        self.position_embeddings = embeddings.position_embeddings
        self.token_type_embeddings = embeddings.token_type_embeddings
        self.LayerNorm = embeddings.LayerNorm

    @property
    def word_embeddings(self) -> nn.Embedding:
        """(2 · vocab, hidden): built when read (FastBert reads it once, when it converts)."""
        with torch.no_grad():
            words = self._embeddings.word_embeddings.weight  # (vocab, hidden)
            types = self.token_type_embeddings.weight  # (2, hidden)
            table = torch.cat([words, words + (types[1] - types[0])])
        return nn.Embedding.from_pretrained(table, freeze=True)


class PairHead(ModeOfModel, nn.Module):  # type: ignore[misc]
    """BERT's classifier after the encoder, in the place of a bi-encoder's pooling: the first
    token (``[CLS]``) → pooler (dense, tanh) → dropout → linear, giving (batch, num_labels) logits."""

    include_prompt = True  # the plans ask pooling this
    reads_first_token = True  # FastBert, the GPU pipeline and packed rows compute the last layer for it alone
    mode_of = "classifier"  # its mode is the classifier's (ModeOfModel)

    def __init__(self, pooler: nn.Module, dropout: nn.Module, classifier: nn.Linear) -> None:
        super().__init__()
        self.pooler, self.dropout, self.classifier = pooler, dropout, classifier
        self.output_dim = int(classifier.out_features)

    def forward(self, token_embeddings: Tensor, attention_mask: Tensor, prompt_length: int = 0) -> Tensor:
        return self.classifier(self.dropout(self.pooler(token_embeddings)))  # (batch, num_labels)


LONE_TEXT_PARTNER = "A second sentence."


class PairTransformer(ModeOfModel, Transformer):  # type: ignore[misc]
    """The runners' input module for a cross-encoder: pairs in, token vectors of :class:`PairModel` out.

    ``tokenize`` also takes lone texts (the engines' probe and calibration sentences), read as the
    pair ``(text, LONE_TEXT_PARTNER)`` so that both segments are exercised. Not ``(text, text)``:
    cutting a pair of two long texts makes the tokenizer list every combination of their overflowing
    pieces (30 s for the probe's long text at ``max_length=8``).
    """

    def __init__(self, network: PairModel, tokenizer: PreTrainedTokenizerBase, max_seq_length: int) -> None:
        super().__init__(network, tokenizer, max_seq_length=max_seq_length)  # type: ignore[arg-type]
        self.vocab_size = network.vocab_size

    def forward(self, features: dict[str, Tensor]) -> Tensor:
        """The first token's vector of the last layer, (batch, 1, hidden): what :class:`PairHead`
        reads (:meth:`PairModel.first_token_vectors`). Packed rows take
        :meth:`PairModel.packed_first_token_vectors` (:class:`~sbert.inference.packing.PackedTransformer`)."""
        network = cast(PairModel, self.model)  # what __init__ was given
        return network.first_token_vectors(features["input_ids"], features["attention_mask"])

    def extra_repr(self) -> str:
        """Part of the compiled graph's cache key (its module's repr): a graph traced before this
        forward gave every token's vector, and must not be read back for it."""
        return "output: the first token's vector, the last layer computed for it alone"

    def tokenize(self, texts: Sequence[Any]) -> Tokenized:
        pairs = [(item, LONE_TEXT_PARTNER) if isinstance(item, str) else item for item in texts]
        tokenized = tokenize_pairs(self.tokenizer, pairs, self.max_seq_length)
        return Tokenized(pair_ids(tokenized, self.vocab_size), tokenized.truncated)


@dataclass
class EngineParts:
    """What the runners take for a cross-encoder: the input module and the head in pooling's place."""

    transformer: PairTransformer
    head: PairHead


def engine_parts(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, max_seq_length: int
) -> EngineParts | None:
    """Split a BERT sequence classifier for the runners; ``None`` for other architectures, which run
    as one PyTorch module in float32."""
    bert = getattr(model, "bert", None)
    classifier = getattr(model, "classifier", None)
    dropout = getattr(model, "dropout", None)
    pooler = getattr(bert, "pooler", None)
    if not (
        getattr(model.config, "model_type", "") == "bert"
        and isinstance(classifier, nn.Linear)
        and isinstance(dropout, nn.Dropout)
        and pooler is not None
        and len(tokenizer) <= int(model.config.vocab_size)  # else the folded ids would overlap
    ):
        return None
    head = PairHead(pooler, dropout, classifier)  # type: ignore[arg-type]  # checked just above
    network = PairModel(bert, head)
    transformer = PairTransformer(network, tokenizer, max_seq_length=max_seq_length)
    return EngineParts(transformer, head)
