"""Hard-negative mining: for each (anchor, positive) pair, corpus texts close to the anchor that are not
its positive, as sentence-transformers' ``mine_hard_negatives`` picks them.

Every anchor is searched against the corpus (the positives, plus any extra texts) exactly, in chunks
(:func:`~sbert.embeddings.search.top_k_chunked`: memory of one score block, not queries × corpus),
through a new :class:`~sbert.index.VectorIndex` of any kind, or through a saved index,
whose vectors never enter memory (:mod:`sbert.applications.candidates`). The ``range_max +
max_positives`` nearest candidates of each anchor are then filtered (its positives, a margin below
the positive's score, a maximum or minimum score, optionally judged by a cross-encoder) and the
negatives taken from ranks ``range_min`` on: the best (``top``) or drawn at random (``random``).
The rows, in any of sentence-transformers' four output formats, and their file are in
:mod:`sbert.applications.mined`.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from sbert.applications.candidates import nearest, nearest_in_index
from sbert.applications.mined import MinedRow, MiningResult
from sbert.applications.mined import write_mined as write_mined  # callers import it from here too
from sbert.base.contracts import RetrievalEncoder
from sbert.base.options import MINED_FORMATS, SAMPLING_STRATEGIES

if TYPE_CHECKING:
    from sbert.cross_encoder import CrossEncoder
    from sbert.index import VectorIndex

logger = logging.getLogger("sbert")

FILTERS = ("absolute_margin", "relative_margin", "max_score", "min_score")


@dataclass(frozen=True)
class MiningOptions:
    """How :func:`mine_hard_negatives` ranks, filters, picks and lays out the negatives, with
    sentence-transformers' names and defaults.

    Attributes:
        range_min: Skip this many of the best remaining candidates (likely unlabelled positives).
        range_max: Rank this many candidates per anchor (default: ``range_min + num_negatives +
            max_positives``, times 10 on ``num_negatives`` when a filter is set, as sentence-transformers).
        max_score: Keep candidates scoring at most this.
        min_score: Keep candidates scoring at least this.
        absolute_margin: Keep candidates scoring below the anchor's lowest positive score by at least this.
        relative_margin: Keep candidates below ``positive − |positive| · relative_margin``.
        num_negatives: Negatives per anchor.
        sampling_strategy: ``top`` (the best remaining) or ``random`` (drawn from all that remain).
        query_prompt_name: Another prompt than the model's query prompt, for the anchors.
        corpus_prompt_name: Another prompt than the model's document prompt, for the corpus.
        include_positives: Let an anchor's own positives be its negatives (for reranking sets).
        output_format: ``n-tuple`` (anchor, positive, negative_1..k; rows short of k negatives are
            dropped), ``triplet`` (one row per negative), ``labeled-pair`` (anchor, text, label: 1 for
            each positive, 0 for each negative) or ``labeled-list`` (anchor, [positive, negatives...],
            [1, 0, ...]; rows without a negative are dropped): see :meth:`MiningResult.table`.
        batch_size: Encoding and cross-encoder batch size.
        index_kind: ``None`` for exact search, else a :class:`~sbert.index.VectorIndex` kind.
        seed: The ``random`` strategy's seed (the draws equal ``random.seed(seed)`` then
            sentence-transformers' ``random.sample`` calls).
        show_progress_bar: Encoding progress bars (default: for 1000 sentences or more).

    Examples:
        >>> MiningOptions(num_negatives=5, absolute_margin=0.05).filters()
        {'absolute_margin': 0.05}
    """

    range_min: int = 0
    range_max: int | None = None
    max_score: float | None = None
    min_score: float | None = None
    absolute_margin: float | None = None
    relative_margin: float | None = None
    num_negatives: int = 3
    sampling_strategy: str = "top"
    query_prompt_name: str | None = None
    corpus_prompt_name: str | None = None
    include_positives: bool = False
    output_format: str = "n-tuple"
    batch_size: int = 32
    index_kind: str | None = None
    seed: int = 0
    show_progress_bar: bool | None = None

    def filters(self) -> dict[str, float]:
        """The score filters that are set, by name."""
        values = {name: getattr(self, name) for name in FILTERS}
        return {name: value for name, value in values.items() if value is not None}


@dataclass
class _Candidates:
    """The texts mining ranks: every distinct candidate (``texts``), every distinct anchor
    (``queries``) and each anchor's positives as positions in ``texts``, in order of first appearance."""

    texts: list[str]
    position: dict[str, int]
    queries: list[str]
    query_positives: list[list[int]]

    @classmethod
    def of(cls, pairs: Sequence[tuple[str, str]], extra: Sequence[str]) -> _Candidates:
        positives = [positive for _, positive in pairs]
        texts = list(dict.fromkeys([*extra, *positives]))
        position = {text: i for i, text in enumerate(texts)}
        queries = list(dict.fromkeys(anchor for anchor, _ in pairs))
        query_positives: list[list[int]] = [[] for _ in queries]
        query_of = {query: i for i, query in enumerate(queries)}
        for anchor, positive in pairs:
            own = query_positives[query_of[anchor]]
            if position[positive] not in own:
                own.append(position[positive])
        return cls(texts, position, queries, query_positives)


def mine_hard_negatives(
    pairs: Sequence[tuple[str, str]],
    model: RetrievalEncoder,
    options: MiningOptions | None = None,
    *,
    corpus: Sequence[str] | None = None,
    cross_encoder: CrossEncoder | None = None,
    index: VectorIndex | None = None,
) -> MiningResult:
    """Hard negatives for (anchor, positive) pairs, with sentence-transformers' semantics.

    Args:
        pairs: (anchor, positive) texts; an anchor may have several positives (several rows).
        model: The encoder; anchors go through ``encode_query``, the corpus through ``encode_document``.
        options: The ranges, filters, strategy and format (default: :class:`MiningOptions`'s).
        corpus: More candidate texts besides the positives (which are always candidates).
        cross_encoder: Rescore the candidates and positives with it before the filters (only with a
            filter: ``max_score``, ``min_score`` or a margin).
        index: A saved index of the corpus, made with ``model`` (``VectorIndex.load(path, model)``),
            instead of ``corpus``: its vectors stay where they are (memory maps, a store) and its
            texts are the candidates; a positive it lacks is no other anchor's candidate.

    Returns:
        A :class:`MiningResult`; rows in the order of the first appearance of each anchor, then of
        each of its positives.

    Raises:
        ValueError: no pairs, an unknown strategy or format, ``num_negatives`` < 1, a range that cannot
            hold ``num_negatives`` candidates, a cross-encoder without a filter to apply, or
            ``include_positives`` with another format than n-tuple, or ``index`` with ``corpus`` or
            ``index_kind``.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> pairs = [("A man plays guitar.", "Someone plays an instrument."),
        ...          ("A dog runs in a park.", "An animal is outside."),
        ...          ("A woman cooks pasta.", "Someone makes dinner.")]
        >>> model = SentenceEncoder.from_pretrained()
        >>> result = mine_hard_negatives(pairs, model, MiningOptions(num_negatives=1))
        >>> result.rows[0].negatives
        ('Someone makes dinner.',)
    """
    options = options or MiningOptions()
    range_max, max_positives = _check_options(pairs, options, cross_encoder)
    if index is not None and (corpus is not None or options.index_kind is not None):
        raise ValueError("a saved index is the corpus: give index, or corpus and index_kind, not both")
    # With a saved index, only the positives are encoded; its candidates join `texts` when found.
    found = _Candidates.of(pairs, corpus if corpus is not None and index is None else [])
    texts, queries, query_positives = found.texts, found.queries, found.query_positives

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    encode: dict[str, Any] = {
        "batch_size": options.batch_size,
        "show_progress_bar": options.show_progress_bar,
        "normalize": True,
    }
    texts_vectors = np.asarray(model.encode_document(texts, prompt_name=options.corpus_prompt_name, **encode))
    query_vectors = np.asarray(model.encode_query(queries, prompt_name=options.query_prompt_name, **encode))
    seconds["encode"] = time.perf_counter() - start

    start = time.perf_counter()
    if index is None:
        scores, ids = nearest(query_vectors, texts_vectors, range_max + max_positives, options.index_kind)
    else:
        scores, ids = nearest_in_index(index, query_vectors, range_max + max_positives, texts, found.position)
        # Scored as the index scores: a prefix index (built with dimensions) cuts both sides.
        query_vectors, texts_vectors = index.query_vectors(query_vectors), index.query_vectors(texts_vectors)
    seconds["search"] = time.perf_counter() - start
    flat_positives = [(q, p) for q, own in enumerate(query_positives) for p in own]
    positive_scores = torch.from_numpy(
        np.einsum(
            "ij,ij->i",
            query_vectors[[q for q, _ in flat_positives]],
            texts_vectors[[p for _, p in flat_positives]],
        )
    ).float()  # (rows,), cosine: both sides are unit length

    if cross_encoder is not None:
        start = time.perf_counter()
        scores, positive_scores = _rescore(
            cross_encoder, queries, texts, ids, flat_positives, options.batch_size, options.show_progress_bar
        )
        seconds["rescore"] = time.perf_counter() - start

    start = time.perf_counter()
    scores[ids < 0] = -float("inf")  # padding of a short result list
    if not options.include_positives:
        for q, own in enumerate(query_positives):
            scores[q, torch.isin(ids[q], torch.tensor(own))] = -float("inf")
    skipped = _apply_filters(scores, positive_scores, query_positives, options.filters())
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices[:, :range_max]
    scores, ids = (
        scores.gather(1, order)[:, options.range_min :],
        ids.gather(1, order)[:, options.range_min :],
    )
    if options.sampling_strategy == "top":
        scores, ids = scores[:, : options.num_negatives], ids[:, : options.num_negatives]
    else:
        scores, ids = _sample(scores, ids, options.num_negatives, random.Random(options.seed))
    rows, missing = _rows(
        options.output_format, queries, texts, query_positives, positive_scores, scores, ids
    )
    seconds["select"] = time.perf_counter() - start
    result = MiningResult(
        rows, options.output_format, options.num_negatives, range_max, skipped, missing, seconds
    )
    logger.info("%s", result.summary())
    return result


def _check_options(
    pairs: Sequence[tuple[str, str]], options: MiningOptions, cross_encoder: CrossEncoder | None
) -> tuple[int, int]:
    """Refuse what cannot be mined; the ``range_max`` to rank (the default one unless set) and the
    most positives an anchor has."""
    _check_arguments(pairs, options)
    filtering = bool(options.filters())
    if options.include_positives and options.output_format != "n-tuple":
        # sentence-transformers switches to n-tuple here; saying so beats writing another format.
        raise ValueError("include_positives keeps each anchor's ranking, which only the n-tuple format holds")
    if cross_encoder is not None and not filtering:
        raise ValueError(
            "a cross-encoder only judges the filters: give max_score, min_score, absolute_margin or "
            "relative_margin with it"
        )
    max_positives = Counter(anchor for anchor, _ in pairs).most_common(1)[0][1]
    range_max = options.range_max
    if range_max is None:
        # Room for the filters to remove candidates, as sentence-transformers leaves it.
        range_max = options.range_min + options.num_negatives * (10 if filtering else 1) + max_positives
    _check_range(options.range_min, range_max, options.num_negatives)
    return range_max, max_positives


def _check_arguments(pairs: Sequence[tuple[str, str]], options: MiningOptions) -> None:
    if not pairs:
        raise ValueError("no (anchor, positive) pairs to mine negatives for")
    if options.num_negatives < 1:
        raise ValueError(f"num_negatives must be at least 1, got {options.num_negatives}")
    if options.sampling_strategy not in SAMPLING_STRATEGIES:
        raise ValueError(
            f"unknown sampling_strategy {options.sampling_strategy!r}; "
            f"choose one of {', '.join(SAMPLING_STRATEGIES)}"
        )
    if options.output_format not in MINED_FORMATS:
        raise ValueError(
            f"unknown output_format {options.output_format!r}; choose one of {', '.join(MINED_FORMATS)}"
        )
    if options.range_min < 0:
        raise ValueError(f"range_min must be at least 0, got {options.range_min}")


def _check_range(range_min: int, range_max: int, num_negatives: int) -> None:
    if range_min >= range_max:
        raise ValueError(f"range_min must be below range_max, got {range_min} and {range_max}")
    if num_negatives > range_max - range_min:
        raise ValueError(
            f"cannot take {num_negatives} negatives from ranks {range_min} to {range_max}: only "
            f"{range_max - range_min} candidates; lower num_negatives or range_min, or raise range_max"
        )


def _rescore(
    cross_encoder: CrossEncoder,
    queries: list[str],
    texts: list[str],
    ids: torch.Tensor,
    flat_positives: list[tuple[int, int]],
    batch_size: int,
    show_progress_bar: bool | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-encoder scores of every (query, candidate) and (query, positive) pair."""
    candidates = [(queries[q], texts[i]) for q, row in enumerate(ids.tolist()) for i in row if i >= 0]
    predicted = cross_encoder.predict(candidates, batch_size, show_progress_bar=show_progress_bar)
    scores = torch.full(ids.shape, -float("inf"))
    scores[ids >= 0] = torch.from_numpy(np.asarray(predicted, dtype=np.float32))
    positives = cross_encoder.predict(
        [(queries[q], texts[p]) for q, p in flat_positives], batch_size, show_progress_bar=False
    )
    return scores, torch.from_numpy(np.asarray(positives, dtype=np.float32))


def _apply_filters(
    scores: torch.Tensor,
    positive_scores: torch.Tensor,
    query_positives: list[list[int]],
    filters: dict[str, float],
) -> dict[str, int]:
    """Set the score of every candidate a filter removes to -inf; how many each removed."""
    # With several positives, the margin is taken from the lowest-scoring one (the harder positive).
    counts = [len(own) for own in query_positives]
    lowest = torch.stack([part.min() for part in torch.split(positive_scores, counts)]).unsqueeze(1)
    thresholds = {
        "absolute_margin": lambda value: scores + value > lowest,
        "relative_margin": lambda value: scores > lowest - lowest.abs() * value,
        "max_score": lambda value: scores > value,
        "min_score": lambda value: scores < value,
    }
    skipped = {}
    for name, value in filters.items():
        removed = thresholds[name](value) & torch.isfinite(scores)
        scores[removed] = -float("inf")
        skipped[name] = int(removed.sum())
    return skipped


def _sample(
    scores: torch.Tensor, ids: torch.Tensor, count: int, rng: random.Random
) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` candidates drawn from each row's finite ones, then sorted best first."""
    options = (ids.shape[1] - torch.isinf(scores).sum(dim=1)).clamp(min=count)
    chosen = torch.tensor([rng.sample(range(int(n)), k=count) for n in options.tolist()])
    scores, ids = scores.gather(1, chosen), ids.gather(1, chosen)
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    return scores.gather(1, order), ids.gather(1, order)


def _rows(
    output_format: str,
    queries: list[str],
    texts: list[str],
    query_positives: list[list[int]],
    positive_scores: torch.Tensor,
    scores: torch.Tensor,
    ids: torch.Tensor,
) -> tuple[list[MinedRow], int]:
    rows, missing, flat = [], 0, 0
    for q, own in enumerate(query_positives):
        finite = [(i, s) for i, s in zip(ids[q].tolist(), scores[q].tolist()) if s != -float("inf")]
        for p in own:
            positive = float(positive_scores[flat])
            flat += 1
            short = scores.shape[1] - len(finite)  # negatives this row lacks
            negatives = tuple(texts[i] for i, _ in finite)
            found = MinedRow(queries[q], texts[p], negatives, positive, tuple(s for _, s in finite))
            if output_format == "triplet":
                missing += short
                rows += [MinedRow(queries[q], texts[p], (texts[i],), positive, (s,)) for i, s in finite]
            elif output_format == "n-tuple":
                missing += int(short > 0)
                rows += [] if short else [found]
            elif output_format == "labeled-list":
                missing += short
                rows += [found] if finite else []
            else:
                # labeled-pair: every positive is a row of the file, the anchor's negatives once.
                missing += short if p == own[0] else 0
                rows.append(found)
    return rows, missing
