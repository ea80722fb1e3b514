"""CUDA graphs for small batches: one query's forward pass replayed as a single launch.

A MiniLM-sized model on a GPU finishes a 32-token query in less time than Python takes to launch its
hundred-odd kernels one by one. A CUDA graph records those launches once per input shape and replays
them with one call. Shapes are bucketed (sentences to 1, 2, 4 or 8; tokens to 16, 32 or 64), and a
batch is padded to its bucket: padding is masked out of attention and pooling, and padded rows are
dropped, so a bucket's vectors are the unbucketed ones (to float rounding; tested on the CPU, where
the bucketed shapes run without a graph). A batch that fits no bucket, a device other than CUDA or a
capture that fails runs the same function without a graph: the fallback never changes the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from sbert.inference.precision import warn_once

BATCH_BUCKETS = (1, 2, 4, 8)
SEQ_BUCKETS = (16, 32, 64)
# Replays before capture: the first calls pick kernels and allocate workspaces, which a graph must not record.
WARMUP_CALLS = 2

# (input_ids, attention_mask) each (batch, seq), and the prompt's tokens → sentence vectors (batch, dim)
PaddedForward = Callable[[Tensor, Tensor, int], Tensor]


def bucket_shape(
    sentences: int,
    longest: int,
    batch_buckets: Sequence[int] = BATCH_BUCKETS,
    seq_buckets: Sequence[int] = SEQ_BUCKETS,
) -> tuple[int, int] | None:
    """The smallest bucket ``(batch, seq)`` a batch fits in, or ``None`` when it fits none.

    Examples:
        >>> bucket_shape(1, 12), bucket_shape(3, 17), bucket_shape(9, 10)
        ((1, 16), (4, 32), None)
    """
    batch = next((size for size in batch_buckets if size >= sentences), None)
    seq = next((size for size in seq_buckets if size >= longest), None)
    return None if batch is None or seq is None else (batch, seq)


def bucket_padded(ids: Sequence[Sequence[int]], shape: tuple[int, int], pad_id: int) -> tuple[Tensor, Tensor]:
    """``input_ids`` and ``attention_mask`` (int64, ``shape``) of ``ids`` padded to a bucket.

    Rows past the real ones hold one pad token marked real, so that no row attends to nothing (which
    gives NaN); they are dropped after the forward pass.
    """
    input_ids = np.full(shape, pad_id, dtype=np.int64)
    mask = np.zeros(shape, dtype=np.int64)
    mask[len(ids) :, 0] = 1
    for row, tokens in enumerate(ids):
        input_ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return torch.from_numpy(input_ids), torch.from_numpy(mask)


class GraphedForward:
    """``forward`` on bucket-shaped batches, replayed from one CUDA graph per shape and prompt length.

    Args:
        forward: The padded forward pass to record (it must not sync with the host: no ``.item()``).
        device: Where it runs; graphs only on CUDA, elsewhere ``forward`` runs as it is.

    Examples:
        >>> double = GraphedForward(lambda ids, mask, prompt: (ids * mask).float() * 2, torch.device("cpu"))
        >>> double(torch.ones(1, 16, dtype=torch.long), torch.ones(1, 16, dtype=torch.long), 0).sum()
        tensor(32.)
    """

    def __init__(self, forward: PaddedForward, device: torch.device) -> None:
        self.forward = forward
        self.device = device
        self.enabled = device.type == "cuda"
        self.failure: str | None = None  # why capture failed, where it did (the benchmark reports it)
        self.graphs: dict[tuple[int, int, int], tuple[torch.cuda.CUDAGraph, Tensor, Tensor, Tensor]] = {}

    def __call__(self, input_ids: Tensor, attention_mask: Tensor, prompt_length: int) -> Tensor:
        """Sentence vectors ``(batch, dim)`` of one bucket-shaped batch on the device."""
        if not self.enabled:
            return self.forward(input_ids, attention_mask, prompt_length)
        key = (*input_ids.shape, prompt_length)
        entry = self.graphs.get(key) or self._capture(input_ids, attention_mask, prompt_length)
        if entry is None:
            return self.forward(input_ids, attention_mask, prompt_length)
        graph, static_ids, static_mask, output = entry
        static_ids.copy_(input_ids)
        static_mask.copy_(attention_mask)
        graph.replay()
        return output.clone()  # the next replay overwrites the graph's output

    def _capture(
        self, input_ids: Tensor, attention_mask: Tensor, prompt_length: int
    ) -> tuple[torch.cuda.CUDAGraph, Tensor, Tensor, Tensor] | None:
        static_ids, static_mask = input_ids.clone(), attention_mask.clone()
        # The warm-up runs the forward pass as it is, outside the capture's try: an error it raises
        # (a dtype CUDA refuses, a bad input) is the forward pass's own, which running without a
        # graph would raise too; it is raised here, not taken for a capture failure (issue 43).
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                self.forward(static_ids, static_mask, prompt_length)
        torch.cuda.current_stream(self.device).wait_stream(side)
        try:
            graph = torch.cuda.CUDAGraph()
            # A private memory pool (a few MB for a MiniLM bucket). Thread-local: the pipeline's host
            # thread may pin memory meanwhile, which a global capture would refuse.
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                output = self.forward(static_ids, static_mask, prompt_length)
        except torch.OutOfMemoryError:
            raise
        except Exception as error:  # what only a capture refuses (a sync inside, a driver without graphs)
            warn_once(
                f"CUDA graph capture failed ({type(error).__name__}: {error}); small batches run without graphs"
            )
            self.enabled = False
            self.failure = f"{type(error).__name__}: {error}"
            return None
        entry = (graph, static_ids, static_mask, output)
        self.graphs[(*input_ids.shape, prompt_length)] = entry
        return entry
