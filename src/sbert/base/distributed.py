"""Training on several processes and machines: ``torch.distributed`` under ``torchrun``.

``torchrun`` starts one process per GPU (or per CPU share) and describes the run in environment
variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``);
:func:`join_process_group` reads them. The :class:`~sbert.training.Trainer` then works on *global*
batches: the same length-grouped batches, in the same order, as a single process with the same
``batch_size``, each cut into one contiguous share per rank (:func:`rank_share`). Gradients are
averaged by ``DistributedDataParallel``; losses with in-batch negatives see the embeddings of every
rank through :func:`gather_with_grad`. So N processes take the same optimiser steps as one process
(exactly, in float32 with dropout off), and ``batch_size`` means one thing everywhere: examples per
optimiser step, over all processes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn

logger = logging.getLogger("sbert")

# How long a process waits to reach the others at start-up, and inside one collective operation
# (a rank waits there while rank 0 evaluates on the dev set, so this one is long).
RENDEZVOUS_TIMEOUT_S = 30.0
COLLECTIVE_TIMEOUT_S = 1800.0


class DistributedError(RuntimeError):
    """A process of a distributed run could not join, disagrees with the others, or lost them."""


@dataclass(frozen=True)
class Distributed:
    """This process's place in a distributed run.

    Examples:
        >>> Distributed(rank=1, world_size=4).label
        'rank 1 of 4'
    """

    rank: int
    world_size: int

    @property
    def is_main(self) -> bool:
        """Rank 0 alone evaluates, logs, writes checkpoints and saves the model."""
        return self.rank == 0

    @property
    def label(self) -> str:
        return f"rank {self.rank} of {self.world_size}"

    @classmethod
    def current(cls) -> Distributed | None:
        """The run this process belongs to, or ``None`` outside a process group of two or more."""
        if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() < 2:
            return None
        return cls(dist.get_rank(), dist.get_world_size())


def distributed_device(requested: str | None) -> torch.device:
    """This rank's device: its own GPU (``LOCAL_RANK``) on CUDA, else the CPU."""
    wanted = torch.device(requested or ("cuda" if torch.cuda.is_available() else "cpu"))
    if wanted.type != "cuda":
        return wanted
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
    return device


def join_process_group(
    device: torch.device,
    rendezvous_timeout: float = RENDEZVOUS_TIMEOUT_S,
    timeout: float = COLLECTIVE_TIMEOUT_S,
) -> Distributed:
    """Join the run described by the environment: NCCL on CUDA, gloo on the CPU.

    Raises:
        DistributedError: the rendezvous (``MASTER_ADDR:MASTER_PORT``) was not reached within
            ``rendezvous_timeout`` seconds, or the environment is incomplete; the message names the rank.
    """
    env = os.environ
    world_size = int(env.get("WORLD_SIZE", "1"))
    rank = int(env.get("RANK", "-1"))
    label = f"rank {rank} of {world_size}"
    missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT") if not env.get(name)]
    if missing or not 0 <= rank < world_size:
        raise DistributedError(
            f"{label}: the environment does not describe a distributed run ({', '.join(missing) or 'RANK'} "
            "missing or out of range): start it with torchrun"
        )
    address, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    # Under torchrun the agent hosts the store and every worker is a client; otherwise rank 0 hosts it.
    agent_store = env.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    try:
        store = dist.TCPStore(
            address,
            port,
            world_size,
            is_master=rank == 0 and not agent_store,
            timeout=timedelta(seconds=rendezvous_timeout),
            multi_tenant=not agent_store,
        )
        store.set_timeout(timedelta(seconds=timeout))
        dist.init_process_group(
            "nccl" if device.type == "cuda" else "gloo",
            store=dist.PrefixStore("default_pg", store),
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout),
        )
    except (RuntimeError, TimeoutError, ValueError) as error:
        cause = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DistributedError(
            f"{label}: cannot reach the rendezvous at {address}:{port} within {rendezvous_timeout:g} s "
            f"({cause}); check the address and port (--rdzv-endpoint or --master-addr/--master-port), "
            "that the port is open, and that every machine was started"
        ) from error
    return Distributed(rank, world_size)


def lost_peers(error: BaseException) -> bool:
    """Whether ``error`` came from a collective whose peer died or hung (gloo and NCCL raise plain
    RuntimeErrors for a closed connection)."""
    text = str(error)
    return isinstance(error, dist.DistError) or any(
        marker in text for marker in ("gloo", "NCCL", "Connection reset", "Connection closed")
    )


def leave_process_group() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def check_batching(examples: int, batch_size: int, world_size: int) -> None:
    """Refuse a global batch that the processes cannot share equally, or too little data for them."""
    if batch_size % world_size:
        lower = batch_size // world_size * world_size
        nearest = [size for size in (lower, lower + world_size) if size > 0]
        raise ValueError(
            f"--batch-size {batch_size} is the global batch (examples per optimiser step over all "
            f"{world_size} processes) and must be a multiple of {world_size}, so that each process takes an "
            f"equal share; use {' or '.join(map(str, nearest))}"
        )
    if examples < world_size:
        raise ValueError(
            f"{world_size} processes but only {examples} training examples: each process needs at "
            f"least one example per step; start at most {examples} processes"
        )


def rank_share(batch: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """Rank ``rank``'s contiguous share of a global batch; shares differ in size by at most one.

    Examples:
        >>> [rank_share(np.arange(5), r, 2).tolist() for r in range(2)]
        [[0, 1, 2], [3, 4]]
    """
    return np.array_split(batch, world_size)[rank]


def loss_weights(share: int, batch: int, world_size: int, replicated: bool) -> tuple[float, float]:
    """``(weight, scale)`` of a rank's loss on its ``share`` of a global ``batch``.

    Summed over the ranks, ``weight · loss`` is the global batch's loss; backpropagating
    ``scale · loss`` gives, once DDP has averaged the gradients over the ranks, the gradient of one
    process on the whole batch. A ``replicated`` loss (computed from gathered embeddings) is already
    the whole batch's on every rank; any other is its share's mean, weighted by the share's size.

    Examples:
        >>> loss_weights(3, 5, 2, replicated=False), loss_weights(3, 5, 2, replicated=True)
        ((0.6, 1.2), (0.5, 2.0))
    """
    if replicated:
        return 1 / world_size, float(world_size)
    return share / batch, world_size * share / batch


def distributed_model(
    run: Distributed, objective: nn.Module, examples: Sequence[Any], settings: Mapping[str, Any]
) -> nn.Module:
    """``objective`` in DistributedDataParallel, once every rank is shown to have the same code, data,
    settings and weights (:func:`check_same_everywhere`)."""
    from torch.nn.parallel import DistributedDataParallel

    device = next(objective.parameters()).device
    check_same_everywhere(run, fingerprints(objective, examples, settings), device)
    # Unused parameters (BERT's pooler under mean pooling) must not stall the gradient all-reduce;
    # the loss moves its own tensors, so DDP is given no device to scatter inputs to.
    return DistributedDataParallel(objective, find_unused_parameters=True)


def step_seed(seed: int, rank: int, step: int) -> int:
    """Seed of torch's RNG (dropout) for one rank and step: every rank draws its own masks, and a resumed
    run draws the same ones without saving each rank's RNG state."""
    return int(np.random.SeedSequence([seed, rank, step]).generate_state(1)[0])


class _GatherWithGrad(torch.autograd.Function):
    """All-gather along the first dimension (shares may differ in size); gradients flow to the local share.

    Every rank computes the same loss from the gathered tensor, so the gradient of that loss with
    respect to this rank's share is already complete locally: backward keeps the local slice and needs
    no communication. (The trainer multiplies such a loss by the world size, which cancels
    DistributedDataParallel's averaging of the gradients.)
    """

    @staticmethod
    def forward(ctx: Any, local: Tensor) -> Tensor:  # local: (n_rank, ...)
        world_size = dist.get_world_size()
        size = torch.tensor([local.shape[0]], device=local.device)
        sizes = [torch.zeros_like(size) for _ in range(world_size)]
        dist.all_gather(sizes, size)
        counts = [int(s.item()) for s in sizes]
        padded = local.new_zeros((max(counts), *local.shape[1:]))
        padded[: local.shape[0]] = local
        parts = [torch.empty_like(padded) for _ in range(world_size)]
        dist.all_gather(parts, padded.contiguous())
        rank = dist.get_rank()
        ctx.start, ctx.count = sum(counts[:rank]), counts[rank]
        return torch.cat([part[:count] for part, count in zip(parts, counts)])  # (sum of n_rank, ...)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        return grad[ctx.start : ctx.start + ctx.count]


def gather_with_grad(local: Tensor) -> Tensor:
    """Concatenate every rank's ``local`` in rank order; ``local`` itself outside a distributed run.

    Examples:
        >>> gather_with_grad(torch.ones(2, 3)).shape  # one process: unchanged
        torch.Size([2, 3])
    """
    if Distributed.current() is None:
        return local
    gathered: Tensor = _GatherWithGrad.apply(local)
    return gathered


def agree(loss_share: float, stop: bool, device: torch.device) -> tuple[float, bool]:
    """Sum every rank's share of the loss and learn whether any rank asked to stop, in one collective."""
    values = torch.tensor([loss_share, float(stop)], dtype=torch.float64, device=device)
    dist.all_reduce(values)
    return float(values[0]), bool(values[1] > 0)


def fingerprints(objective: nn.Module, examples: Sequence[Any], config: Mapping[str, Any]) -> dict[str, str]:
    """SHA-256 digests of what every rank must share: sbert's code, the data, the settings, the weights."""
    package = Path(__file__).resolve().parents[1]
    code = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        code.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    data = hashlib.sha256()
    for example in examples:
        data.update(repr(example).encode() + b"\n")
    weights = hashlib.sha256()
    for name, tensor in sorted(objective.state_dict().items()):
        weights.update(name.encode() + tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    settings = hashlib.sha256(json.dumps(dict(config), sort_keys=True, default=str).encode())
    digests = {"sbert code": code, "training data": data, "settings": settings, "model weights": weights}
    return {name: digest.hexdigest() for name, digest in digests.items()}


def check_same_everywhere(run: Distributed, digests: Mapping[str, str], device: torch.device) -> None:
    """Compare this rank's digests with rank 0's; refuse to train on a mismatch (on every rank).

    Raises:
        DistributedError: naming the first thing that differs and the ranks that differ from rank 0.
    """
    names = list(digests)
    local = torch.tensor(
        [list(hashlib.sha256(digests[name].encode()).digest()) for name in names], dtype=torch.uint8
    ).to(device)  # (len(names), 32)
    every = [torch.empty_like(local) for _ in range(run.world_size)]
    dist.all_gather(every, local)
    for row, name in enumerate(names):
        differ = [rank for rank, other in enumerate(every) if not torch.equal(other[row], every[0][row])]
        if differ:
            ranks = ", ".join(map(str, differ))
            raise DistributedError(
                f"{run.label}: the {name} of rank {ranks} differ from rank 0's (checksum at start): every "
                "process must run the same sbert code on the same data, settings and model"
            )
