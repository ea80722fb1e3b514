"""Each request's texts tokenized once, as the request arrives, on host threads beside the batcher's
worker; and the token budget (:class:`TokenBudget`) the batcher cuts batches by on the GPU pipeline.

The worker used to tokenize every merged batch twice on its own thread: once for the token counts
(the budget, ``usage``, ``truncate: false``), once more inside ``encode()``. On a GPU that host work
was most of a batch's cycle: a merged batch of 878 sentences (64 clients × 32) took ~90 ms where the
H200 computes it in ~10 ms, 0.11× of direct ``encode()`` (benchmarks/gpu_serve.py, 2026-11-27). Here
a request's texts are tokenized (without truncation: the ids give the counts) on a pool of threads
as soon as it is queued, while the worker runs the batch before it; the worker reads the ids, cuts
only the rare inputs over the model's limit (tokenized again with truncation, so their ids are
exactly ``encode()``'s) and hands the ids to the engine ``encode()`` runs on
(:meth:`~sbert.SentenceEncoder.encode_token_ids`): the same runner, batching and vectors as
``encode(texts)``. The Rust tokenizer releases the GIL, so the threads do not hold up the event loop.

A sparse model on a transformer (:attr:`~sbert.server.sparse_served.SparseServed.takes_token_ids`:
SPLADE, CSR, a Router's default route) is tokenized on arrival the same way, its ids run by the
same runners with the same batching, or on the exact path in the same cuts. Other models (a static
model, a dense router, a sparse model's static route) keep ``encode(texts)`` on the worker
(:meth:`ArrivalTokens.supports` is false).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sbert.base.inputs import tokenized

Ids = list[Sequence[int]]  # one row of token ids a text, special tokens (and the prompt) included


@dataclass(frozen=True)
class TokenBudget:
    """TEI's ``max_batch_tokens``: the most tokens one batch may hold, and how they count."""

    tokens: int
    padded: bool = False  # sentences × longest (a padded model), else the sum of real tokens

    def cost(self, counts: Sequence[int]) -> int:
        """What a batch of inputs of these token counts costs against :attr:`tokens`."""
        if not counts:
            return 0
        return max(counts) * len(counts) if self.padded else sum(counts)

    def groups(self, counts: Sequence[Sequence[int]]) -> list[range]:
        """Consecutive runs of requests (by index), each within the budget, in arrival order; a
        request over the budget alone is a run of its own (TEI: the entry that would pass the
        budget starts the next batch).

        Examples:
            >>> TokenBudget(10).groups([[4], [3, 2], [5], [20], [1]])
            [range(0, 2), range(2, 3), range(3, 4), range(4, 5)]
            >>> TokenBudget(10, padded=True).groups([[4], [3, 2], [1]])
            [range(0, 1), range(1, 3)]
        """
        runs: list[range] = []
        start, held = 0, list[int]()
        for index, each in enumerate(counts):
            if held and self.cost([*held, *each]) > self.tokens:
                runs.append(range(start, index))
                start, held = index, []
            held += each
        if counts:
            runs.append(range(start, len(counts)))
        return runs


def token_pool(threads: int | None = None) -> ThreadPoolExecutor:
    """The host threads that tokenize requests as they arrive (a batcher's texts and pairs);
    ``threads`` ``None``: the GPU pipeline's count (the cores but two, 1 to 8)."""
    from sbert.inference.cuda.pipeline import tokenizing_threads

    return ThreadPoolExecutor(threads or tokenizing_threads(), thread_name_prefix="sbert-serve-tokens")


class ArrivalTokens:
    """A pool of host threads that tokenizes texts for a :class:`~sbert.server.batcher.Batcher`.

    Args:
        model: A :class:`~sbert.SentenceEncoder` on a transformer (:meth:`supports`).
        threads: Tokenizing threads; ``None``: the GPU pipeline's count (the cores but two, 1 to 8).
        pool: The threads to tokenize on (:func:`token_pool`; the batcher's, shared with its pairs);
            ``None``: a pool of ``threads`` of its own.

    Examples:
        >>> from sbert import SentenceEncoder
        >>> model = SentenceEncoder.from_pretrained()
        >>> tokens = ArrivalTokens(model, threads=1)
        >>> ids = tokens.submit(["A man plays a guitar."], "").result()
        >>> list(ids[0]) == list(model.token_ids(["A man plays a guitar."]).ids[0])
        True
        >>> tokens.close()
    """

    def __init__(
        self, model: Any, threads: int | None = None, pool: ThreadPoolExecutor | None = None
    ) -> None:
        self.model = model
        self.module = model.input_module
        self.pool = pool or token_pool(threads)
        self._prompts: dict[str, int] = {}  # prompt → its length in tokens (pooling may leave them out)

    @staticmethod
    def supports(model: Any) -> bool:
        """Whether the model's ``encode()`` is token ids from its transformer's tokenizer, then
        :meth:`~sbert.SentenceEncoder.encode_token_ids` (not a static model, not a router)."""
        from sbert.encoder.model import SentenceEncoder
        from sbert.modules import Transformer

        if getattr(model, "is_sparse", False):  # server.sparse_served: a transformer stack
            return bool(model.takes_token_ids)
        return (
            isinstance(model, SentenceEncoder)
            and type(model).encode is SentenceEncoder.encode
            and isinstance(model.input_module, Transformer)
        )

    def submit(self, texts: list[str], prompt: str) -> Future[Ids]:
        """The texts' token ids, ``prompt`` before each, without truncation (their counts are the
        token counts), from a pool thread."""
        return self.pool.submit(self.whole, texts, prompt)

    def prompt_length(self, prompt: str) -> int:
        """The prompt's tokens, as ``encode(prompt=prompt)`` counts them (0: no prompt)."""
        length = self._prompts.get(prompt)
        if length is None:  # threads may race to fill it: the same value
            length = self._prompts[prompt] = self.model.with_prompt([], None, prompt)[1]
        return length

    def truncated(self, texts: Sequence[str], prompt: str) -> Ids:
        """The token ids ``encode(texts, prompt=prompt)`` runs: cut to ``max_seq_length`` as it cuts them."""
        return list(self.model.token_ids([prompt + text for text in texts]).ids)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    def whole(self, texts: list[str], prompt: str) -> Ids:
        """The texts' token ids, ``prompt`` before each, not cut (on the calling thread)."""
        prompted = [prompt + text for text in texts] if prompt else texts
        return list(tokenized(self.module.whole_token_ids, prompted))  # lone surrogates replaced
